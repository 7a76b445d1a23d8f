package render

import (
	"fmt"
	"slices"
	"testing"
)

func TestSplitDocuments(t *testing.T) {
	tests := []struct {
		out  string
		want []string // "line:text" of each document
	}{
		{"a: 1\n", []string{"1:a: 1\n"}},
		{"a: 1\n---\nb: 2", []string{"1:a: 1\n", "3:b: 2"}},
		{"---\na: 1\n---\n", []string{"1:", "2:a: 1\n"}},
		{"a: 1\r\n---\r\nb: 2\r\n", []string{"1:a: 1\r\n", "3:b: 2\r\n"}},
		{"a: 1\n--- # next\nb: 2\n", []string{"1:a: 1\n", "3:b: 2\n"}},
		{"a: 1\n---  b: 2\nc: 3\n", []string{"1:a: 1\n", "2:b: 2\nc: 3\n"}},
		{"a: |\n  x\n----\n---x\n  ---\n", []string{"1:a: |\n  x\n----\n---x\n  ---\n"}},
		{"", nil},
	}
	for _, tt := range tests {
		var got []string
		for _, d := range splitDocuments([]byte(tt.out)) {
			got = append(got, fmt.Sprintf("%d:%s", d.line, d.text))
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("splitDocuments(%q) = %q, want %q", tt.out, got, tt.want)
		}
	}
}

func TestBlank(t *testing.T) {
	for doc, want := range map[string]bool{
		"":                  true,
		"  \n\t\n":          true,
		"# a\n  # b\r\n":    true,
		"# a\nkey: v\n":     false,
		"null":              false, // decoded, then skipped as no object
		"  key: v # note\n": false,
	} {
		if got := blank([]byte(doc)); got != want {
			t.Errorf("blank(%q) = %v, want %v", doc, got, want)
		}
	}
}
