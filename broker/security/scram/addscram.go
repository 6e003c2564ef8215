package scram

import (
	"errors"
	"sort"
	"strings"
)

// DefaultAddScramIterations is the iteration count of an --add-scram
// argument that gives none (Kafka's ScramParser).
const DefaultAddScramIterations = 4096

// AddScram is one parsed --add-scram argument: a user's credential for one
// mechanism, derived as Kafka's kafka-storage format derives it.
type AddScram struct {
	Mechanism  Mechanism
	Name       string
	Credential Credential
}

// ErrAddScram wraps every refusal of ParseAddScram; the message after it
// is Kafka's FormatterException text.
var ErrAddScram = errors.New("add-scram")

func addScramError(msg string) error { return &addScramErr{msg} }

type addScramErr struct{ msg string }

func (e *addScramErr) Error() string { return e.msg }
func (e *addScramErr) Unwrap() error { return ErrAddScram }

// ParseAddScram reads one --add-scram argument with Kafka's grammar
// (ScramParser): MECHANISM=[key=value,...] with the keys name (required),
// password or salt and saltedpassword (base64), salt alone (base64), and
// iterations (default 4096, within [MinIterations, MaxIterations]). The
// whole argument is trimmed, the components are not; a value in double
// quotes loses them; a repeated key keeps its last value. A salt not given
// is random. The refusals are Kafka's messages, except that a salted
// password that does not decode is not repeated back (it is a secret).
func ParseAddScram(arg string) (AddScram, error) {
	arg = strings.TrimFunc(arg, func(r rune) bool { return r <= ' ' }) // Java's String.trim
	eq := strings.IndexByte(arg, '=')
	if eq < 0 {
		return AddScram{}, addScramError("Failed to find equals sign in SCRAM argument '" + arg + "'")
	}
	mechName, config := arg[:eq], arg[eq+1:]
	m, ok := MechanismByName(mechName)
	if !ok {
		return AddScram{}, addScramError("The add-scram mechanism " + mechName + " is not supported.")
	}
	if !strings.HasPrefix(config, "[") {
		return AddScram{}, addScramError("Expected configuration string to start with [")
	}
	if !strings.HasSuffix(config, "]") || len(config) < 2 {
		return AddScram{}, addScramError("Expected configuration string to end with ]")
	}
	components := map[string]string{}
	for _, c := range javaSplit(config[1:len(config)-1], ',') {
		k, v, ok := strings.Cut(c, "=")
		if !ok {
			return AddScram{}, addScramError("No equals sign found in SCRAM component: " + c)
		}
		if len(v) >= 2 && strings.HasPrefix(v, `"`) && strings.HasSuffix(v, `"`) {
			v = v[1 : len(v)-1]
		}
		components[k] = v
	}
	return addScramCredential(m, components)
}

// addScramCredential is Kafka's PerMechanismData: the components' checks
// in Kafka's order, then the credential.
func addScramCredential(m Mechanism, components map[string]string) (AddScram, error) {
	take := func(k string) (string, bool) {
		v, ok := components[k]
		delete(components, k)
		return v, ok
	}
	name, ok := take("name")
	if !ok {
		return AddScram{}, addScramError("You must supply 'name' to add-scram")
	}
	var salt []byte
	saltString, hasSalt := take("salt")
	if hasSalt {
		var err error
		if salt, err = javaBase64(saltString); err != nil {
			return AddScram{}, addScramError("Failed to decode given salt: " + saltString)
		}
	}
	iterations := int32(DefaultAddScramIterations)
	if s, ok := take("iterations"); ok {
		n, err := javaParseInt(s)
		if err != nil {
			return AddScram{}, addScramError("Failed to parse iterations count: " + s)
		}
		iterations = n
	}
	password, hasPassword := take("password")
	saltedString, hasSalted := take("saltedpassword")
	var salted []byte
	if !hasPassword {
		switch {
		case !hasSalted:
			return AddScram{}, addScramError("You must supply one of 'password' or 'saltedpassword' to add-scram")
		case !hasSalt:
			return AddScram{}, addScramError("You must supply 'salt' with 'saltedpassword' to add-scram")
		}
		var err error
		if salted, err = javaBase64(saltedString); err != nil {
			return AddScram{}, addScramError("Failed to decode given saltedPassword")
		}
	}
	if len(components) > 0 {
		keys := make([]string, 0, len(components))
		for k := range components {
			keys = append(keys, k)
		}
		sort.Strings(keys) // Kafka's TreeMap order
		return AddScram{}, addScramError("Unknown SCRAM configurations: " + strings.Join(keys, ", "))
	}
	if !hasSalt {
		salt = RandomSalt()
	}
	if iterations < MinIterations {
		return AddScram{}, addScramError("The 'iterations' value must be >= 4096 for add-scram using " + m.enumName())
	}
	if iterations > MaxIterations {
		return AddScram{}, addScramError("The 'iterations' value must be <= 16384 for add-scram using " + m.enumName())
	}
	var cred Credential
	var err error
	if hasPassword {
		cred, err = NewCredential(m, password, salt, iterations)
	} else {
		cred, err = CredentialFromSaltedPassword(m, salt, salted, iterations)
	}
	if err != nil {
		// Kafka's HMAC key refuses an empty password or salted password.
		return AddScram{}, addScramError("Empty key")
	}
	return AddScram{Mechanism: m, Name: name, Credential: cred}, nil
}
