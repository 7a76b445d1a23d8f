package render

import "sync"

// maxRunaway is how many abandoned renders of one object may still run
// before new renders of that object are refused (BudgetDegraded). Counted
// per object, not per folder: the tenant who writes one object's spec
// must not be able to stop the renders of everyone else's objects of the
// same kind. An abandoned render stops at its next function call (every
// function checks the stop flag, and each call is bounded), so the count
// falls back within about the grace period.
const maxRunaway = 2

// runaways counts the renders abandoned past their deadline that still
// run, by object.
type runaways struct {
	mu    sync.Mutex
	total int
	by    map[string]int
}

// of is how many renders of the object key still run abandoned.
func (r *runaways) of(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.by[key]
}

// add changes the count of the object key by d and returns it.
func (r *runaways) add(key string, d int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.by == nil {
		r.by = map[string]int{}
	}
	r.total += d
	n := r.by[key] + d
	if n == 0 {
		delete(r.by, key)
	} else {
		r.by[key] = n
	}
	return n
}

func (r *runaways) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}

// objectKey identifies the object of a render: namespace, name and uid
// (a new object of the same name is another object). Objects without
// metadata (offline renders, tests) share the empty key.
func objectKey(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	namespace, _ := meta["namespace"].(string)
	name, _ := meta["name"].(string)
	uid, _ := meta["uid"].(string)
	return namespace + "/" + name + "/" + uid
}
