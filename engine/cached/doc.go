// Package cached holds objects as the operator's informers cache them, and
// the list and watch that produce them straight from the API server's JSON.
//
// An informer of a dynamic client decodes every object of every watch event
// into nested maps; keeping those maps is most of an operator's memory (an
// unstructured Deployment holds about 8 KB of heap), and turning them back
// into something compact costs an encode. Here each object is decoded once,
// as far as cache keys, indexes, event filters and ownership checks read
// (its metadata), and the rest is kept as the JSON it arrived in, less its
// managedFields, to be decoded when a reconcile reads it.
package cached
