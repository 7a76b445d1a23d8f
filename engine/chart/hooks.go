package chart

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/tmplop/operator/engine/render"
)

// Helm's hook annotations.
const (
	HookAnnotation       = "helm.sh/hook"
	HookWeightAnnotation = "helm.sh/hook-weight"
	HookDeleteAnnotation = "helm.sh/hook-delete-policy"
)

// phase is when a child is applied: pre-install/pre-upgrade hooks, the
// chart's resources, post-install/post-upgrade hooks.
type phase int

const (
	pre phase = iota
	resources
	post
)

// stage is a phase and, for hooks, a weight: children of a stage wait for
// every child of the stages before it to be Current.
type stage struct {
	phase  phase
	weight int
}

func (s stage) compare(o stage) int {
	return cmp.Or(cmp.Compare(s.phase, o.phase), cmp.Compare(s.weight, o.weight))
}

func (s stage) String() string {
	switch s.phase {
	case pre:
		return fmt.Sprintf("pre hook, weight %d", s.weight)
	case post:
		return fmt.Sprintf("post hook, weight %d", s.weight)
	}
	return "resources"
}

// Ordered is a chart's render turned into what the engine applies: the
// children, each under the group of its stage (Manifest.Template), and
// the order of the groups as a dependsOn map.
type Ordered struct {
	Manifests []render.Manifest
	DependsOn map[string][]string
	// DeleteHooks are the pre-delete hooks, applied when the object is
	// deleted, not before.
	DeleteHooks []render.Manifest
	// PostDeleteHooks are the post-delete hooks, applied when the object
	// is deleted and its other children are gone.
	PostDeleteHooks []render.Manifest
}

// Order makes a chart's hooks an apply order, as Helm runs them at
// install and upgrade: pre-install and pre-upgrade hooks first, by
// helm.sh/hook-weight (lower first), each stage Current (a Job complete)
// before the next; then the chart's resources; then post-install and
// post-upgrade hooks by weight. A hook for both a pre and a post event
// runs before. Test hooks, rollback hooks and unknown hook names render
// nothing here (Helm skips unknown ones too); pre-delete and post-delete
// hooks are returned apart.
//
// A group is a template file, or, when one file renders children of
// several stages, the file and its stage: `file [pre hook, weight -5]`.
func Order(ms []render.Manifest) Ordered {
	var out Ordered
	stages := map[string]stage{} // group -> stage
	fileStages := map[string]map[stage]bool{}
	kept := make([]render.Manifest, 0, len(ms))
	keptStages := make([]stage, 0, len(ms))
	for _, m := range ms {
		st, keep, onDelete := stageOf(m.Object.GetAnnotations())
		if onDelete.pre {
			out.DeleteHooks = append(out.DeleteHooks, m)
		}
		if onDelete.post {
			out.PostDeleteHooks = append(out.PostDeleteHooks, m)
		}
		if !keep {
			continue
		}
		if fileStages[m.Template] == nil {
			fileStages[m.Template] = map[stage]bool{}
		}
		fileStages[m.Template][st] = true
		kept = append(kept, m)
		keptStages = append(keptStages, st)
	}
	for i := range kept {
		if len(fileStages[kept[i].Template]) > 1 {
			kept[i].Template = fmt.Sprintf("%s [%s]", kept[i].Template, keptStages[i])
		}
		stages[kept[i].Template] = keptStages[i]
	}
	out.Manifests = kept
	groups := slices.Sorted(maps.Keys(stages))
	for _, g := range groups {
		for _, d := range groups {
			if stages[d].compare(stages[g]) < 0 {
				if out.DependsOn == nil {
					out.DependsOn = map[string][]string{}
				}
				out.DependsOn[g] = append(out.DependsOn[g], d)
			}
		}
	}
	return out
}

// deletion is when a hook runs at the object's deletion: before its
// children go (pre-delete), after (post-delete), or both.
type deletion struct{ pre, post bool }

// stageOf reads a child's hook annotations: its stage, whether it is
// applied with the chart, and whether it is a hook of the deletion.
func stageOf(ann map[string]string) (st stage, keep bool, onDelete deletion) {
	events, ok := ann[HookAnnotation]
	if !ok {
		return stage{phase: resources}, true, deletion{}
	}
	var isPre, isPost bool
	for _, e := range strings.Split(events, ",") {
		switch strings.ToLower(strings.TrimSpace(e)) {
		case "pre-install", "pre-upgrade":
			isPre = true
		case "post-install", "post-upgrade":
			isPost = true
		case "pre-delete":
			onDelete.pre = true
		case "post-delete":
			onDelete.post = true
		case "pre-rollback", "post-rollback", "test", "test-success":
		default:
			return stage{}, false, deletion{} // Helm skips a manifest with an unknown hook
		}
	}
	weight, _ := strconv.Atoi(ann[HookWeightAnnotation]) // Helm: 0 when unreadable
	switch {
	case isPre:
		return stage{phase: pre, weight: weight}, true, onDelete
	case isPost:
		return stage{phase: post, weight: weight}, true, onDelete
	}
	return stage{}, false, onDelete
}

// NeverApplied reports whether a manifest annotated helm.sh/hook: events
// is never applied, at install, upgrade or deletion: test and rollback
// hooks, and any manifest with a hook name Helm does not know (Order skips
// them all). operator rbac grants no rights for the kinds of such
// manifests.
func NeverApplied(events string) bool {
	_, keep, onDelete := stageOf(map[string]string{HookAnnotation: events})
	return !keep && !onDelete.pre && !onDelete.post
}

// IsPostDeleteHook reports whether an object's annotations make it a
// post-delete hook: the deletion of a parent waits for such a child
// instead of deleting it, until the hooks ran.
func IsPostDeleteHook(ann map[string]string) bool {
	_, _, onDelete := stageOf(ann)
	return onDelete.post
}

// Helm's hook delete policies that have a meaning for the engine.
const (
	// PolicyBeforeHookCreation (Helm's default for a hook without a
	// policy): a hook whose rendered content changed is deleted and
	// created anew, not patched, as Helm runs it again; a Job, whose Pod
	// template cannot change, runs again.
	PolicyBeforeHookCreation = "before-hook-creation"
	// PolicyHookSucceeded: a hook is deleted once it is Current (a Job
	// complete). The parent's status records that it ran (status.hooks),
	// so that it is not created again until its content changes.
	PolicyHookSucceeded = "hook-succeeded"
)

// policies are the hook-delete-policy values of a child with these
// annotations; nil when it is no hook.
func policies(ann map[string]string) []string {
	if _, hook := ann[HookAnnotation]; !hook {
		return nil
	}
	var out []string
	for _, p := range strings.Split(ann[HookDeleteAnnotation], ",") {
		if p = strings.ToLower(strings.TrimSpace(p)); p != "" {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return []string{PolicyBeforeHookCreation}
	}
	return out
}

// RecreateOnChange reports whether a child with these annotations is a
// hook to delete and create anew when its content changes.
func RecreateOnChange(ann map[string]string) bool {
	return slices.Contains(policies(ann), PolicyBeforeHookCreation)
}

// DeleteOnSuccess reports whether a child with these annotations is a
// hook to delete once it is Current.
func DeleteOnSuccess(ann map[string]string) bool {
	return slices.Contains(policies(ann), PolicyHookSucceeded)
}
