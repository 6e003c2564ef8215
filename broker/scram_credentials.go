package broker

import (
	"errors"
	"fmt"
	"sort"
	"sync/atomic"

	"github.com/gregor-broker/gregor/broker/security/scram"
)

// scramUsers are SCRAM credentials by user and mechanism. A published
// value is never mutated: a change builds a new one (with).
type scramUsers map[string]map[scram.Mechanism]scram.Credential

// with is u after removing the removes and setting the upserts.
func (u scramUsers) with(removes []scram.RemoveRecord, upserts []scram.Record) scramUsers {
	out := make(scramUsers, len(u)+len(upserts))
	for name, creds := range u {
		out[name] = creds
	}
	copyOnWrite := map[string]bool{}
	user := func(name string) map[scram.Mechanism]scram.Credential {
		if !copyOnWrite[name] {
			fresh := map[scram.Mechanism]scram.Credential{}
			for m, c := range out[name] {
				fresh[m] = c
			}
			out[name], copyOnWrite[name] = fresh, true
		}
		return out[name]
	}
	for _, r := range removes {
		creds := user(r.Name)
		delete(creds, scram.Mechanism(r.Mechanism))
		if len(creds) == 0 {
			delete(out, r.Name)
			delete(copyOnWrite, r.Name)
		}
	}
	for _, r := range upserts {
		user(r.Name)[scram.Mechanism(r.Mechanism)] = r.Credential
	}
	return out
}

// scramStore holds a single node's SCRAM credentials. Logins read it
// without a lock (lookup, from a connection's goroutine); changes replace
// it under Broker.mu held for writing, persisted in gregor-topics.json
// with the catalogue.
type scramStore struct {
	users atomic.Pointer[scramUsers]
}

// current is the published credentials (never nil).
func (s *scramStore) current() scramUsers {
	if s == nil {
		return nil
	}
	if u := s.users.Load(); u != nil {
		return *u
	}
	return nil
}

func (s *scramStore) set(u scramUsers) { s.users.Store(&u) }

// lookup is the scram.Lookup of a login: the credential in force now, so
// an altered credential applies to the next login.
func (s *scramStore) lookup(name string, m scram.Mechanism) (scram.Credential, bool) {
	c, ok := s.current()[name][m]
	return c, ok
}

// scramCredentialRecord is how a credential is persisted in the metadata
// file: what Kafka's UserScramCredentialRecord holds (the salt, the stored
// and server keys, base64 in JSON, and the iterations), never a password
// or salted password.
type scramCredentialRecord struct {
	Name       string `json:"name"`
	Mechanism  string `json:"mechanism"`
	Salt       []byte `json:"salt"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
	Iterations int32  `json:"iterations"`
}

// records lists the credentials for the metadata file, by user then
// mechanism.
func (u scramUsers) records() []scramCredentialRecord {
	names := make([]string, 0, len(u))
	for name := range u {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []scramCredentialRecord
	for _, name := range names {
		for _, m := range scram.Mechanisms {
			c, ok := u[name][m]
			if !ok {
				continue
			}
			out = append(out, scramCredentialRecord{Name: name, Mechanism: m.Name(), Salt: c.Salt,
				StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: c.Iterations})
		}
	}
	return out
}

var errBadScramRecord = errors.New("bad SCRAM credential")

// loadScramUsers reads the metadata file's credentials, refusing one that
// could not verify a login (the keys must be the mechanism's hash size).
func loadScramUsers(recs []scramCredentialRecord) (scramUsers, error) {
	out := scramUsers{}
	for _, r := range recs {
		m, ok := scram.MechanismByName(r.Mechanism)
		switch {
		case !ok:
			return nil, fmt.Errorf("%w of user %q: unknown mechanism %q", errBadScramRecord, r.Name, r.Mechanism)
		case r.Name == "":
			return nil, fmt.Errorf("%w: an empty user name", errBadScramRecord)
		case len(r.StoredKey) != m.Size() || len(r.ServerKey) != m.Size():
			return nil, fmt.Errorf("%w of user %q for %s: keys of %d and %d bytes, want %d", errBadScramRecord, r.Name, m, len(r.StoredKey), len(r.ServerKey), m.Size())
		case r.Iterations <= 0:
			return nil, fmt.Errorf("%w of user %q for %s: %d iterations", errBadScramRecord, r.Name, m, r.Iterations)
		}
		if out[r.Name] == nil {
			out[r.Name] = map[scram.Mechanism]scram.Credential{}
		}
		out[r.Name][m] = scram.Credential{Salt: r.Salt, StoredKey: r.StoredKey, ServerKey: r.ServerKey, Iterations: r.Iterations}
	}
	return out, nil
}

// parseAddScram reads the --add-scram arguments (Config.AddScram), before
// anything starts.
func parseAddScram(args []string) ([]scram.AddScram, error) {
	out := make([]scram.AddScram, 0, len(args))
	for _, arg := range args {
		a, err := scram.ParseAddScram(arg)
		if err != nil {
			return nil, fmt.Errorf("broker: --add-scram: %w", err)
		}
		out = append(out, a)
	}
	return out, nil
}

// addScramCredentials creates the --add-scram credentials a user does not
// have yet for that mechanism, before the listener opens, as kafka-storage
// format --add-scram seeds a new cluster's credentials; an existing
// credential is kept, so a restart with the same flags does not undo an
// AlterUserScramCredentials. Of two arguments for the same user and
// mechanism the later wins, as the later record does in Kafka.
func (b *Broker) addScramCredentials(args []scram.AddScram) error {
	var upserts []scram.Record
	for _, a := range args {
		if _, ok := b.scram.lookup(a.Name, a.Mechanism); ok {
			continue
		}
		upserts = append(upserts, scram.Record{Name: a.Name, Mechanism: int8(a.Mechanism), Credential: a.Credential})
	}
	if len(upserts) == 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	old := b.scram.current()
	b.scram.set(old.with(nil, upserts))
	if err := b.catalog.save(); err != nil {
		b.scram.set(old)
		return err
	}
	for _, u := range upserts {
		b.log.Info("created SCRAM credential", "user", u.Name, "mechanism", scram.Mechanism(u.Mechanism).Name(), "iterations", u.Credential.Iterations)
	}
	return nil
}

// warnNoScramUsers says, at start, that a listener serving SCRAM has no
// user to log in with, which is legal (as in Kafka) but rarely meant.
func (b *Broker) warnNoScramUsers() {
	if len(b.scram.current()) > 0 {
		return
	}
	for _, l := range b.listeners {
		if l.sasl == nil {
			continue
		}
		for _, name := range l.sasl.Mechanisms {
			if _, ok := scram.MechanismByName(name); ok {
				b.log.Warn("gregor: SCRAM is enabled but no user has a SCRAM credential, so no SCRAM login can succeed; create one with --add-scram",
					"listener", l.cfg.Name)
				break
			}
		}
	}
}
