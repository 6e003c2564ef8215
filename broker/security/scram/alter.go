package scram

// Error codes ValidateAlterations answers with (Kafka's Errors).
const (
	CodeUnknownServerError       int16 = -1
	CodeUnsupportedSaslMechanism int16 = 33
	CodeUnsupportedVersion       int16 = 35
	CodeResourceNotFound         int16 = 91
	CodeDuplicateResource        int16 = 92
	CodeUnacceptableCredential   int16 = 93
)

// A Deletion removes one user's credential for one mechanism (an
// AlterUserScramCredentials deletion). Mechanism is the request's type
// byte, which may be unknown.
type Deletion struct {
	Name      string
	Mechanism int8
}

// An Upsertion sets one user's credential for one mechanism from a salted
// password the client computed.
type Upsertion struct {
	Name           string
	Mechanism      int8
	Iterations     int32
	Salt           []byte
	SaltedPassword []byte
}

// AlterRequest is an AlterUserScramCredentials request's content.
type AlterRequest struct {
	Deletions  []Deletion
	Upsertions []Upsertion
}

// An AlterResult is one user's answer; ErrorMessage is nil when Kafka
// sends null.
type AlterResult struct {
	User         string
	ErrorCode    int16
	ErrorMessage *string
}

// AlterOutcome is what ValidateAlterations decides: one result per user
// named, and the records to append as one atomic batch, the removals
// before the credentials as in Kafka.
type AlterOutcome struct {
	Results []AlterResult
	Removes []RemoveRecord
	Upserts []Record
}

// ValidateAlterations decides an AlterUserScramCredentials request as
// Kafka's ScramControlManager.alterCredentials. scramSupported is whether
// the metadata.version has SCRAM (3.5-IV2 and later); exists reports
// whether a credential is stored, for deletions.
//
// A user may appear once per request: a second deletion or upsertion of
// the same name, whatever its mechanism, makes the user's result
// DUPLICATE_RESOURCE and drops both. Then, per entry: UNSUPPORTED_VERSION
// without SCRAM; an empty name is UNACCEPTABLE_CREDENTIAL, an unknown
// mechanism UNSUPPORTED_SASL_MECHANISM; a deletion of a credential not
// stored RESOURCE_NOT_FOUND; an upsertion's iterations outside
// [MinIterations, MaxIterations] UNACCEPTABLE_CREDENTIAL; an empty salted
// password, which Kafka's HMAC refuses, UNKNOWN_SERVER_ERROR without a
// message. A salt is not checked. Results list the deletions, then the
// upsertions, then the failures; Kafka's come in each group in hash-map
// order, here in the request's order.
func ValidateAlterations(req AlterRequest, scramSupported bool, exists func(name string, m Mechanism) bool) AlterOutcome {
	var (
		errs       ordered[AlterResult]
		deletions  ordered[Deletion]
		upsertions ordered[Upsertion]
	)
	fail := func(name string, code int16, msg string) {
		errs.put(name, AlterResult{User: name, ErrorCode: code, ErrorMessage: &msg})
	}
	const duplicate = "A user credential cannot be altered twice in the same request"
	const noScram = "The current metadata.version does not support SCRAM"
	for _, d := range req.Deletions {
		switch {
		case errs.has(d.Name):
		case deletions.remove(d.Name):
			fail(d.Name, CodeDuplicateResource, duplicate)
		case !scramSupported:
			fail(d.Name, CodeUnsupportedVersion, noScram)
		default:
			if code, msg := validateNameAndMechanism(d.Name, d.Mechanism); code != 0 {
				fail(d.Name, code, msg)
			} else if !exists(d.Name, Mechanism(d.Mechanism)) {
				fail(d.Name, CodeResourceNotFound, "Attempt to delete a user credential that does not exist")
			} else {
				deletions.put(d.Name, d)
			}
		}
	}
	for _, u := range req.Upsertions {
		switch {
		case errs.has(u.Name):
		case deletions.remove(u.Name) || upsertions.remove(u.Name):
			fail(u.Name, CodeDuplicateResource, duplicate)
		case !scramSupported:
			fail(u.Name, CodeUnsupportedVersion, noScram)
		default:
			if code, msg := validateNameAndMechanism(u.Name, u.Mechanism); code != 0 {
				fail(u.Name, code, msg)
			} else if u.Iterations < MinIterations {
				fail(u.Name, CodeUnacceptableCredential, "Too few iterations")
			} else if u.Iterations > MaxIterations {
				fail(u.Name, CodeUnacceptableCredential, "Too many iterations")
			} else {
				upsertions.put(u.Name, u)
			}
		}
	}
	var out AlterOutcome
	for _, d := range deletions.values() {
		out.Results = append(out.Results, AlterResult{User: d.Name})
		out.Removes = append(out.Removes, RemoveRecord(d))
	}
	for _, u := range upsertions.values() {
		cred, err := CredentialFromSaltedPassword(Mechanism(u.Mechanism), u.Salt, u.SaltedPassword, u.Iterations)
		if err != nil {
			errs.put(u.Name, AlterResult{User: u.Name, ErrorCode: CodeUnknownServerError})
			continue
		}
		out.Results = append(out.Results, AlterResult{User: u.Name})
		out.Upserts = append(out.Upserts, Record{Name: u.Name, Mechanism: u.Mechanism, Credential: cred})
	}
	out.Results = append(out.Results, errs.values()...)
	return out
}

// validateNameAndMechanism is Kafka's validateScramUsernameAndMechanism;
// code 0 is no error.
func validateNameAndMechanism(name string, m int8) (int16, string) {
	if name == "" {
		return CodeUnacceptableCredential, "Username must not be empty"
	}
	if !Mechanism(m).Valid() {
		return CodeUnsupportedSaslMechanism, "Unknown SCRAM mechanism"
	}
	return 0, ""
}

// ordered is a map by user name that keeps the order of insertion.
type ordered[V any] struct {
	index map[string]int
	items []V
	live  []bool
}

func (o *ordered[V]) has(k string) bool { _, ok := o.index[k]; return ok }

// put sets k's value, keeping its place if it has one.
func (o *ordered[V]) put(k string, v V) {
	if i, ok := o.index[k]; ok {
		o.items[i] = v
		return
	}
	if o.index == nil {
		o.index = map[string]int{}
	}
	o.index[k] = len(o.items)
	o.items = append(o.items, v)
	o.live = append(o.live, true)
}

// remove deletes k and reports whether it was there.
func (o *ordered[V]) remove(k string) bool {
	i, ok := o.index[k]
	if ok {
		delete(o.index, k)
		o.live[i] = false
	}
	return ok
}

func (o *ordered[V]) values() []V {
	var out []V
	for i, v := range o.items {
		if o.live[i] {
			out = append(out, v)
		}
	}
	return out
}
