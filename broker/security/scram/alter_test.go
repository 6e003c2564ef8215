package scram

import (
	"bytes"
	"strconv"
	"testing"
)

func TestValidateAlterationsOrderAndRecords(t *testing.T) {
	stored := map[string]bool{"old/1": true}
	req := AlterRequest{
		Deletions: []Deletion{{"old", 1}, {"gone", 2}},
		Upsertions: []Upsertion{
			{Name: "zed", Mechanism: 2, Iterations: 8192, Salt: []byte("s1"), SaltedPassword: []byte("p1")},
			{Name: "amy", Mechanism: 1, Iterations: 4096, Salt: []byte("s2"), SaltedPassword: []byte("p2")},
			{Name: "few", Mechanism: 1, Iterations: 1, Salt: []byte("s"), SaltedPassword: []byte("p")},
		},
	}
	out := ValidateAlterations(req, true, func(name string, m Mechanism) bool {
		return stored[name+"/"+strconv.Itoa(int(m))]
	})
	var got []string
	for _, r := range out.Results {
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		got = append(got, r.User+":"+strconv.Itoa(int(r.ErrorCode))+":"+msg)
	}
	want := []string{"old:0:", "zed:0:", "amy:0:",
		"gone:91:Attempt to delete a user credential that does not exist",
		"few:93:Too few iterations"}
	if len(got) != len(want) {
		t.Fatalf("results %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("result %d: %q, want %q", i, got[i], want[i])
		}
	}
	if len(out.Removes) != 1 || out.Removes[0] != (RemoveRecord{"old", 1}) {
		t.Errorf("removes %+v", out.Removes)
	}
	if len(out.Upserts) != 2 || out.Upserts[0].Name != "zed" || out.Upserts[1].Name != "amy" {
		t.Fatalf("upserts %+v", out.Upserts)
	}
	zed, _ := CredentialFromSaltedPassword(SHA512, []byte("s1"), []byte("p1"), 8192)
	u := out.Upserts[0]
	if u.Mechanism != 2 || u.Iterations != 8192 || !bytes.Equal(u.StoredKey, zed.StoredKey) ||
		!bytes.Equal(u.ServerKey, zed.ServerKey) || !bytes.Equal(u.Salt, []byte("s1")) {
		t.Errorf("zed's record %+v", u)
	}
}

func TestValidateAlterationsRefusals(t *testing.T) {
	none := func(string, Mechanism) bool { return false }
	all := func(string, Mechanism) bool { return true }
	up := func(name string, m int8, it int32, salted string) Upsertion {
		return Upsertion{Name: name, Mechanism: m, Iterations: it, Salt: []byte("s"), SaltedPassword: []byte(salted)}
	}
	tests := []struct {
		name      string
		req       AlterRequest
		supported bool
		exists    func(string, Mechanism) bool
		code      int16
		msg       string // "-" for a nil message
	}{
		{"empty name", AlterRequest{Upsertions: []Upsertion{up("", 1, 4096, "p")}}, true, none, 93, "Username must not be empty"},
		{"empty name deletion", AlterRequest{Deletions: []Deletion{{"", 1}}}, true, all, 93, "Username must not be empty"},
		{"mechanism 0", AlterRequest{Upsertions: []Upsertion{up("u", 0, 4096, "p")}}, true, none, 33, "Unknown SCRAM mechanism"},
		{"mechanism 3 deletion", AlterRequest{Deletions: []Deletion{{"u", 3}}}, true, all, 33, "Unknown SCRAM mechanism"},
		{"too few", AlterRequest{Upsertions: []Upsertion{up("u", 1, 4095, "p")}}, true, none, 93, "Too few iterations"},
		{"too many", AlterRequest{Upsertions: []Upsertion{up("u", 2, 16385, "p")}}, true, none, 93, "Too many iterations"},
		{"not stored", AlterRequest{Deletions: []Deletion{{"u", 1}}}, true, none, 91, "Attempt to delete a user credential that does not exist"},
		{"no SCRAM", AlterRequest{Upsertions: []Upsertion{up("u", 1, 4096, "p")}}, false, none, 35, "The current metadata.version does not support SCRAM"},
		{"no SCRAM first", AlterRequest{Upsertions: []Upsertion{up("", 9, 1, "")}}, false, none, 35, "The current metadata.version does not support SCRAM"},
		{"empty salted password", AlterRequest{Upsertions: []Upsertion{up("u", 1, 4096, "")}}, true, none, -1, "-"},
		{"two mechanisms, one user", AlterRequest{Upsertions: []Upsertion{up("u", 1, 4096, "p"), up("u", 2, 4096, "p")}}, true, none,
			92, "A user credential cannot be altered twice in the same request"},
		{"delete and upsert", AlterRequest{Deletions: []Deletion{{"u", 1}}, Upsertions: []Upsertion{up("u", 1, 4096, "p")}}, true, all,
			92, "A user credential cannot be altered twice in the same request"},
		{"a failure stays", AlterRequest{Upsertions: []Upsertion{up("u", 1, 1, "p"), up("u", 1, 4096, "p")}}, true, none,
			93, "Too few iterations"},
	}
	for _, tt := range tests {
		out := ValidateAlterations(tt.req, tt.supported, tt.exists)
		if len(out.Results) != 1 || len(out.Removes) != 0 || len(out.Upserts) != 0 {
			t.Errorf("%s: %+v", tt.name, out)
			continue
		}
		r := out.Results[0]
		msg := "-"
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		if r.ErrorCode != tt.code || msg != tt.msg {
			t.Errorf("%s: %d %q, want %d %q", tt.name, r.ErrorCode, msg, tt.code, tt.msg)
		}
	}
}
