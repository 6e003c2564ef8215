package lint

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// modulePath is the module's import path (go.mod).
const modulePath = "github.com/gregor-broker/gregor"

// An importRule says which of the project's packages the non-test code of
// some directories may import. Patterns are paths relative to the module
// root: "x" is the package in x alone, "x/..." x and every package under
// it, "x/*/..." every package under x but not x itself. For each package
// the first rule that matches applies, so the table goes from the most
// specific to the most general, and a new package under a covered prefix
// (a new leaf under broker/, say) is checked without editing it.
type importRule struct {
	dir   string
	allow []string // nil: nothing of the project
	claim string   // where the rule is written down
}

// projectBelowBroker is everything the broker side may build on.
var projectBelowBroker = []string{"coordinator/...", "storage/...", "protocol/...", "vfs/..."}

var importRules = []importRule{
	{"coordinator/group", nil,
		"docs/architecture.md (coordinator/group imports nothing of the project), coordinator/group/doc.go"},
	{"coordinator/txn", nil,
		"docs/architecture.md (coordinator/txn imports nothing of the project), coordinator/txn/doc.go"},
	{"coordinator/share", nil,
		"docs/architecture.md (coordinator/share imports nothing of the project), coordinator/share/doc.go"},
	{"coordinator/controller/metadata", nil, "coordinator/controller/metadata/doc.go"},
	{"coordinator/controller/raftnode", []string{"vfs/..."},
		"docs/architecture.md, coordinator/controller/raftnode/doc.go: the FS seam only"},
	{"coordinator/...", []string{"coordinator/...", "storage/...", "protocol/...", "vfs/..."},
		"docs/architecture.md: no coordinator package imports broker or cmd"},
	{"protocol/...", nil,
		"docs/architecture.md (protocol and protocol/batch import nothing of the project)"},
	{"storage/...", []string{"vfs/..."},
		"docs/architecture.md: storage imports only vfs"},
	{"vfs/...", nil, "docs/architecture.md: vfs/ imports nothing of the project"},
	{"broker/security/listeners", nil,
		"docs/architecture.md, broker/security/listeners/doc.go: a leaf that imports nothing of the project"},
	{"broker/security/principal", nil,
		"docs/architecture.md, broker/security/principal/doc.go: a leaf that imports nothing of the project"},
	{"broker/security/scram", nil,
		"docs/architecture.md (broker/security/scram imports nothing of the project), broker/security/scram/doc.go"},
	{"broker/replication", []string{"broker/partition", "broker/peer", "broker/quota", "storage/...", "protocol/...",
		"coordinator/controller", "coordinator/controller/metadata"},
		"docs/architecture.md, broker/replication/doc.go: replication builds on partition, peer and quota, never on broker"},
	{"broker/security/sasl", []string{"protocol", "broker/security/scram"},
		"docs/architecture.md, broker/security/sasl/doc.go: the SASL authenticator builds on protocol and the SCRAM exchange"},
	{"broker/share", nil,
		"docs/architecture.md, broker/share/doc.go: the share-partition state machine imports nothing of the project"},
	{"broker/*/...", append([]string{"broker/*/..."}, projectBelowBroker...),
		"docs/architecture.md: a leaf package under broker/ never imports broker itself"},
	{"broker", append([]string{"broker/*/..."}, projectBelowBroker...),
		"docs/architecture.md, broker/doc.go: broker imports its leaves, coordinator, storage and protocol; never cmd"},
	{"cmd/...", append([]string{"broker/..."}, projectBelowBroker...),
		"docs/architecture.md: cmd -> broker; nothing imports cmd"},
	{"clustertest", []string{"storage", "protocol/batch"},
		"docs/architecture.md: clustertest imports storage and protocol/batch to compare replicas"},
	{"compat-tests/...", []string{"broker", "protocol/..."},
		"docs/architecture.md: rawdiff runs a broker in-process and writes raw requests"},
	{"bench/...", nil, "docs/architecture.md: bench drives gregor serve as a process"},
}

// clientFiles are the files of gregor's client commands, which the doc
// says import nothing of the project (they talk to any Kafka cluster). The
// rest of cmd/gregor (serve) follows the rule for cmd/.
var clientFiles = []string{
	"cmd/gregor/client.go", "cmd/gregor/topic.go", "cmd/gregor/produce.go", "cmd/gregor/consume.go",
	"cmd/gregor/group.go", "cmd/gregor/group_view.go", "cmd/gregor/cluster.go",
}

// matchDir reports whether a path pattern of an importRule matches rel.
func matchDir(pattern, rel string) bool {
	if p, ok := strings.CutSuffix(pattern, "/*/..."); ok {
		return strings.HasPrefix(rel, p+"/")
	}
	if p, ok := strings.CutSuffix(pattern, "/..."); ok {
		return rel == p || strings.HasPrefix(rel, p+"/")
	}
	return rel == pattern
}

// sourceFile is one non-test Go file of the module and the project
// packages it imports, both relative to the module root.
type sourceFile struct {
	path    string // slash-separated, e.g. broker/topics.go
	imports []string
}

// moduleFiles parses the imports of every non-test .go file of the module
// (not testdata, hidden directories or nested modules).
func moduleFiles(t *testing.T, root string) []sourceFile {
	t.Helper()
	var files []sourceFile
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(must(filepath.Rel(root, p)))
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			if rel != "." && exists(filepath.Join(p, "go.mod")) {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		sf := sourceFile{path: rel}
		for _, spec := range f.Imports {
			ip, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return err
			}
			if ip == modulePath || strings.HasPrefix(ip, modulePath+"/") {
				sf.imports = append(sf.imports, strings.TrimPrefix(strings.TrimPrefix(ip, modulePath), "/"))
			}
		}
		files = append(files, sf)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no Go files under %s", root)
	}
	return files
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestImportDirection checks every project import of non-test code
// against importRules, and that nothing imports cmd/.
func TestImportDirection(t *testing.T) {
	root := moduleRoot(t)
	for _, f := range moduleFiles(t, root) {
		dir := path.Dir(f.path)
		for _, imp := range f.imports {
			if matchDir("cmd/...", imp) {
				t.Errorf("%s imports %s: nothing imports cmd/ (docs/architecture.md)", f.path, imp)
				continue
			}
			if slices.Contains(clientFiles, f.path) {
				t.Errorf("%s imports %s: the client commands import nothing of the project (docs/architecture.md)", f.path, imp)
				continue
			}
			i := slices.IndexFunc(importRules, func(r importRule) bool { return matchDir(r.dir, dir) })
			if i < 0 {
				t.Errorf("%s imports %s: no rule in internal/lint's importRules covers %s; add one from what docs/architecture.md says", f.path, imp, dir)
				continue
			}
			r := importRules[i]
			if !slices.ContainsFunc(r.allow, func(a string) bool { return matchDir(a, imp) }) {
				t.Errorf("%s imports %s, which rule %q does not allow (%s)", f.path, imp, r.dir, r.claim)
			}
		}
	}
	for _, f := range clientFiles {
		if !exists(filepath.Join(root, filepath.FromSlash(f))) {
			t.Errorf("clientFiles lists %s, which does not exist", f)
		}
	}
}

// importsLine finds a doc.go's "Imports:" paragraph (up to a blank comment
// line or the end of the comment).
var importsLine = regexp.MustCompile(`(?m)^// Imports:((?:.*\n)(?://[^\n]*[^/\s][^\n]*\n)*)`)

// pkgWord is a word that may name a package: letters, digits and slashes.
var pkgWord = regexp.MustCompile(`[a-z][a-z0-9]*(?:/[a-z][a-z0-9]*)*`)

// negation starts the part of an Imports: paragraph that says what the
// package does not import.
var negation = regexp.MustCompile(`\b(nothing|never)\b`)

// TestDocImportsClaims checks each doc.go's "Imports:" paragraph against
// the package's imports. The project packages named before "nothing" or
// "never" are the ones it imports, all of them; those named after it
// are not imported. A name is a package's path relative to the module
// root or a tail of it (controller/metadata); a directory names every
// package under it (cmd).
func TestDocImportsClaims(t *testing.T) {
	root := moduleRoot(t)
	files := moduleFiles(t, root)
	imports := map[string]map[string]bool{} // package dir -> project imports
	for _, f := range files {
		dir := path.Dir(f.path)
		if imports[dir] == nil {
			imports[dir] = map[string]bool{}
		}
		for _, imp := range f.imports {
			imports[dir][imp] = true
		}
	}
	// names resolves a word to the packages it names: the package itself
	// (by its path or a tail of it), else every package under the
	// directory it names (isDir).
	names := func(word string) (pkgs []string, isDir bool) {
		var under []string
		for p := range imports {
			switch {
			case p == word || strings.HasSuffix(p, "/"+word):
				pkgs = append(pkgs, p)
			case strings.HasPrefix(p, word+"/"):
				under = append(under, p)
			}
		}
		if len(pkgs) == 0 {
			return under, len(under) > 0
		}
		return pkgs, false
	}
	checked := 0
	for _, f := range files {
		if path.Base(f.path) != "doc.go" {
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f.path)))
		if err != nil {
			t.Fatal(err)
		}
		m := importsLine.FindSubmatch(src)
		if m == nil {
			continue
		}
		checked++
		dir := path.Dir(f.path)
		claim := strings.Join(strings.Fields(strings.ReplaceAll(string(m[1]), "//", "")), " ")
		pos, neg := claim, ""
		if i := negation.FindStringIndex(claim); i != nil {
			pos, neg = claim[:i[0]], claim[i[0]:]
		}
		named := map[string]bool{}
		for _, w := range pkgWord.FindAllString(pos, -1) {
			pkgs, isDir := names(w)
			for _, p := range pkgs {
				named[p] = true
				if !isDir && len(pkgs) == 1 && !imports[dir][p] {
					t.Errorf("%s says the package imports %s (%q); it does not", f.path, p, w)
				}
			}
		}
		for imp := range imports[dir] {
			if !named[imp] {
				t.Errorf("%s's Imports: line does not name %s, which the package imports (%q)", f.path, imp, claim)
			}
		}
		for _, w := range pkgWord.FindAllString(neg, -1) {
			pkgs, _ := names(w)
			for _, p := range pkgs {
				if imports[dir][p] {
					t.Errorf("%s says %q; the package imports %s", f.path, neg, p)
				}
			}
		}
	}
	if checked == 0 {
		t.Error("no doc.go with an Imports: line found; has the convention changed?")
	}
}
