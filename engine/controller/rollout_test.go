package controller

import (
	"testing"

	"github.com/tmplop/operator/engine/revision"
	"github.com/tmplop/operator/engine/rollout"
)

// TestMostServed: a kind's first rollout in steps comes from the revision
// most of its objects are on, among the recorded ones whose files are
// kept, never the folder's own.
func TestMostServed(t *testing.T) {
	revs := []revision.Revision{{Name: "r1", Number: 1}, {Name: "r2", Number: 2}, {Name: "r3", Number: 3}, {Name: "big", Number: 4, FilesOmitted: true}}
	on := func(ns ...int64) []rollout.Object {
		var out []rollout.Object
		for _, n := range ns {
			out = append(out, rollout.Object{ObservedRevision: n})
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		objs   []rollout.Object
		folder int64
		want   rollout.Ref
	}{
		{name: "no objects", folder: 3},
		{name: "all on the folder's", objs: on(3, 3), folder: 3},
		{name: "most on 2", objs: on(1, 2, 2, 3, 3, 3), folder: 3, want: rollout.Ref{Record: "r2", Number: 2}},
		{name: "a tie: the newer", objs: on(1, 2), folder: 3, want: rollout.Ref{Record: "r2", Number: 2}},
		{name: "a revision without its files", objs: on(4, 4, 1), folder: 3, want: rollout.Ref{Record: "r1", Number: 1}},
		{name: "a pruned revision", objs: on(9, 9, 1), folder: 3, want: rollout.Ref{Record: "r1", Number: 1}},
		{name: "never reconciled", objs: on(0, 0, 2), folder: 3, want: rollout.Ref{Record: "r2", Number: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mostServed(tc.objs, revs, tc.folder); got != tc.want {
				t.Errorf("mostServed = %+v, want %+v", got, tc.want)
			}
		})
	}
}
