package lint

import (
	"bufio"
	"bytes"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// citedExt are the kinds of file a comment or doc may cite: those the
// repository holds. Kafka's .scala files, say, are never taken for ours.
const citedExt = `(?:go|md|sh|py|txt|json|hex|properties|xml|java|js|conf|mod|sum)`

// pathCite is a slash-separated path ending in a file name (like
// storage/log.go or docs/configuration.md), not inside a longer word or
// path. A path with a "..." in it (an upstream tree elided) does not match.
var pathCite = regexp.MustCompile(`(?:^|[^A-Za-z0-9_./-])((?:[A-Za-z0-9_-][A-Za-z0-9_.-]*/)+[A-Za-z0-9_-][A-Za-z0-9_.-]*\.` + citedExt + `)\b`)

// bareCite is a Go or Markdown file name alone: in a Go comment, a .go
// name is a file of the comment's own directory.
var bareCite = regexp.MustCompile(`(?:^|[^A-Za-z0-9_./-])([A-Za-z0-9_-][A-Za-z0-9_.-]*\.(?:go|md))\b`)

// url is dropped from the text before citations are looked for.
var url = regexp.MustCompile(`[a-z][a-z0-9+.-]*://\S+`)

// placeholder marks a name that stands for a family of files
// (broker/NN_name.go: NN is the API key), not one file.
var placeholder = regexp.MustCompile(`(?:^|/)N+_`)

// otherProjects are citations of files of other projects, which cannot be
// checked here, each with the reason.
var otherProjects = map[string]string{
	"design.md":                        "the team's design document, kept outside this repository",
	"bin/kafka-reassign-partitions.sh": "a tool of Apache Kafka's distribution",
}

// TestCitedFilesExist checks that every file of the repository a Go
// comment or a Markdown document cites exists. A path is looked up from
// the citing file's directory and each of its parents up to the root (so
// broker/txns.go, raftnode/wal.go from coordinator/controller and
// operations.md from docs/ all resolve); a bare .go name in a Go comment
// is a file of the same directory; a bare name elsewhere may be in any
// directory. Paths under a directory the root .gitignore ignores
// (bench/results/: written by make bench) are not files of the repository.
func TestCitedFilesExist(t *testing.T) {
	root := moduleRoot(t)
	ignored := gitignoredDirs(t, root)
	baseNames := map[string]bool{}
	type source struct {
		rel   string
		texts []string
		goSrc bool
	}
	var sources []source
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(must(filepath.Rel(root, p)))
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") || name == "node_modules" || isIgnored(ignored, rel+"/")) {
				return filepath.SkipDir
			}
			return nil
		}
		baseNames[d.Name()] = true
		// internal/lint speaks of file names in general (doc.go).
		if strings.HasPrefix(rel, "internal/lint/") {
			return nil
		}
		switch {
		case strings.HasSuffix(rel, ".go"):
			f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
			if err != nil {
				return err
			}
			src := source{rel: rel, goSrc: true}
			for _, cg := range f.Comments {
				src.texts = append(src.texts, cg.Text())
			}
			sources = append(sources, src)
		case strings.HasSuffix(rel, ".md"):
			sources = append(sources, source{rel: rel, texts: []string{string(must(os.ReadFile(p)))}})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range sources {
		dir := path.Dir(src.rel)
		for _, text := range src.texts {
			text = url.ReplaceAllString(text, " ")
			for _, m := range pathCite.FindAllStringSubmatch(text, -1) {
				c := m[1]
				if otherProjects[c] != "" || placeholder.MatchString(c) || isIgnored(ignored, c) {
					continue
				}
				if !resolves(root, dir, c) {
					t.Errorf("%s cites %s, which does not exist", src.rel, c)
				}
			}
			for _, m := range bareCite.FindAllStringSubmatch(text, -1) {
				c := m[1]
				if otherProjects[c] != "" || placeholder.MatchString(c) {
					continue
				}
				switch {
				case src.goSrc && strings.HasSuffix(c, ".go"):
					if !exists(filepath.Join(root, filepath.FromSlash(dir), c)) {
						t.Errorf("%s cites %s, which is not in %s/ (name another directory's file by its path)", src.rel, c, dir)
					}
				case !baseNames[c]:
					t.Errorf("%s cites %s, which is nowhere in the repository", src.rel, c)
				}
			}
		}
	}
}

// resolves reports whether p names a file relative to dir or to one of
// its parents up to the root.
func resolves(root, dir, p string) bool {
	for {
		if exists(filepath.Join(root, filepath.FromSlash(dir), filepath.FromSlash(p))) {
			return true
		}
		if dir == "." {
			return false
		}
		dir = path.Dir(dir)
	}
}

// gitignoredDirs returns the directories the root .gitignore ignores by
// an anchored pattern (/bench/results/), with a trailing slash.
func gitignoredDirs(t *testing.T, root string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, ".gitignore"))
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		t.Fatal(err)
	}
	var dirs []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "/") && strings.HasSuffix(l, "/") && !strings.ContainsAny(l, "*?[!") {
			dirs = append(dirs, strings.TrimPrefix(l, "/"))
		}
	}
	return dirs
}

func isIgnored(dirs []string, rel string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(rel, d) {
			return true
		}
	}
	return false
}
