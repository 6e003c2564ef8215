package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// maskedKeys are field names dropped wherever they occur: what may
// legitimately differ between two single-node brokers (ids, addresses,
// timings), the error messages (error codes are always compared; message
// texts are free), and unknown tagged fields.
var maskedKeys = map[string]bool{
	"ThrottleMillis":  true,
	"ClusterID":       true,
	"ControllerID":    true,
	"TopicID":         true,
	"NodeID":          true,
	"Host":            true,
	"Port":            true,
	"Rack":            true,
	"Leader":          true, // a node id
	"Replicas":        true, // node ids
	"ISR":             true, // node ids
	"OfflineReplicas": true, // node ids
	"ErrorMessage":    true,
	"UnknownTags":     true,
	"Version":         true, // kmsg's own copy of the request version
}

// sortKeys: arrays of objects carrying one of these string fields are sorted
// by it, because the order of topics, groups or configs in an answer is not
// part of the protocol.
var sortKeys = []string{"Topic", "Name", "Group", "ResourceName"}

// toTree converts a decoded kmsg response into a generic tree.
func toTree(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var t any
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, err
	}
	return t, nil
}

// normalize drops masked keys and the entry's masked paths (dot-separated,
// "*" matches one segment) and sorts arrays of named objects.
func normalize(t any, path []string, masks [][]string) any {
	switch v := t.(type) {
	case map[string]any:
		for k, child := range v {
			p := append(path[:len(path):len(path)], k)
			if maskedKeys[k] || matchesAny(p, masks) {
				delete(v, k)
				continue
			}
			v[k] = normalize(child, p, masks)
		}
		return v
	case []any:
		for i, child := range v {
			p := append(path[:len(path):len(path)], strconv.Itoa(i))
			v[i] = normalize(child, p, masks)
		}
		sortNamed(v)
		return v
	}
	return t
}

func sortNamed(v []any) {
	key := func(x any) (string, bool) {
		m, ok := x.(map[string]any)
		if !ok {
			return "", false
		}
		for _, k := range sortKeys {
			if s, ok := m[k].(string); ok {
				return s, true
			}
		}
		if n, ok := m["Partition"].(float64); ok {
			return fmt.Sprintf("%020.0f", n), true
		}
		return "", false
	}
	for _, x := range v {
		if _, ok := key(x); !ok {
			return
		}
	}
	sort.SliceStable(v, func(i, j int) bool {
		a, _ := key(v[i])
		b, _ := key(v[j])
		return a < b
	})
}

func splitPaths(ps []string) [][]string {
	out := make([][]string, len(ps))
	for i, p := range ps {
		out[i] = strings.Split(p, ".")
	}
	return out
}

// matches reports whether path equals pattern or lies under it.
func matches(path, pattern []string) bool {
	if len(path) < len(pattern) {
		return false
	}
	for i, seg := range pattern {
		if seg != "*" && seg != path[i] {
			return false
		}
	}
	return true
}

func matchesAny(path []string, patterns [][]string) bool {
	for _, p := range patterns {
		if matches(path, p) {
			return true
		}
	}
	return false
}

// difference is one differing path with both sides' values.
type difference struct {
	path          string
	kafka, gregor string
}

func (d difference) String() string {
	return fmt.Sprintf("%s: kafka=%s gregor=%s", d.path, d.kafka, d.gregor)
}

func show(v any) string {
	if v == nil {
		return "null"
	}
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

// diff lists the paths where the trees differ. An array of configs ("Configs"
// of objects with a "Name") is compared on the names both sides report; the
// names only one side reports are returned as notes.
func diff(k, g any, path []string, out *[]difference, notes *[]string) {
	p := strings.Join(path, ".")
	switch kv := k.(type) {
	case map[string]any:
		gv, ok := g.(map[string]any)
		if !ok {
			*out = append(*out, difference{p, show(k), show(g)})
			return
		}
		keys := map[string]bool{}
		for key := range kv {
			keys[key] = true
		}
		for key := range gv {
			keys[key] = true
		}
		sorted := make([]string, 0, len(keys))
		for key := range keys {
			sorted = append(sorted, key)
		}
		sort.Strings(sorted)
		for _, key := range sorted {
			diff(kv[key], gv[key], append(path[:len(path):len(path)], key), out, notes)
		}
	case []any:
		gv, ok := g.([]any)
		if !ok {
			*out = append(*out, difference{p, show(k), show(g)})
			return
		}
		if len(path) > 0 && path[len(path)-1] == "Configs" && named(kv) && named(gv) {
			diffConfigs(kv, gv, path, out, notes)
			return
		}
		if len(kv) != len(gv) {
			*out = append(*out, difference{p + ".length", strconv.Itoa(len(kv)), strconv.Itoa(len(gv))})
			return
		}
		for i := range kv {
			diff(kv[i], gv[i], append(path[:len(path):len(path)], strconv.Itoa(i)), out, notes)
		}
	default:
		if !reflect.DeepEqual(k, g) {
			*out = append(*out, difference{p, show(k), show(g)})
		}
	}
}

func named(v []any) bool {
	for _, x := range v {
		m, ok := x.(map[string]any)
		if !ok {
			return false
		}
		if _, ok := m["Name"].(string); !ok {
			return false
		}
	}
	return true
}

func diffConfigs(k, g []any, path []string, out *[]difference, notes *[]string) {
	byName := func(v []any) map[string]any {
		m := map[string]any{}
		for _, x := range v {
			m[x.(map[string]any)["Name"].(string)] = x
		}
		return m
	}
	km, gm := byName(k), byName(g)
	var onlyK, onlyG []string
	for name := range km {
		if _, ok := gm[name]; !ok {
			onlyK = append(onlyK, name)
		}
	}
	for name := range gm {
		if _, ok := km[name]; !ok {
			onlyG = append(onlyG, name)
		}
	}
	sort.Strings(onlyK)
	sort.Strings(onlyG)
	p := strings.Join(path, ".")
	if len(onlyK) > 0 {
		*notes = append(*notes, fmt.Sprintf("%s: only kafka reports %d: %s", p, len(onlyK), strings.Join(onlyK, ",")))
	}
	if len(onlyG) > 0 {
		*notes = append(*notes, fmt.Sprintf("%s: only gregor reports %d: %s", p, len(onlyG), strings.Join(onlyG, ",")))
	}
	names := make([]string, 0, len(km))
	for name := range km {
		if _, ok := gm[name]; ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		diff(km[name], gm[name], append(path[:len(path):len(path)], name), out, notes)
	}
}

// messages collects the error messages of a tree by path (before masking),
// for the comparison of their presence.
func messages(t any, path string, out map[string]any) {
	switch v := t.(type) {
	case map[string]any:
		for k, child := range v {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if k == "ErrorMessage" {
				out[p] = child
				continue
			}
			messages(child, p, out)
		}
	case []any:
		for i, child := range v {
			messages(child, path+"."+strconv.Itoa(i), out)
		}
	}
}

// messageDiffs lists the paths where one side sends an error message and
// the other none (null): the texts are masked, since Gregor words many of
// its own, but whether there is one is compared.
func messageDiffs(k, g any) []difference {
	km, gm := map[string]any{}, map[string]any{}
	messages(k, "", km)
	messages(g, "", gm)
	var out []difference
	for p, kv := range km {
		if (kv == nil) != (gm[p] == nil) {
			out = append(out, difference{p, show(kv), show(gm[p])})
		}
	}
	for p, gv := range gm {
		if _, ok := km[p]; !ok && gv != nil {
			out = append(out, difference{p, "(absent)", show(gv)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}
