// Package migrate moves the stored objects of a kind to its CRD's storage
// version, and then prunes the CRD's status.storedVersions to that
// version alone, so that an old version can later be dropped from the CRD
// (the API server refuses to drop a version still listed there).
//
// A kind folder that changes its storage version (kind.yaml's versions,
// docs/versions.md) leaves every object written before in etcd at the old
// version: the API server converts it when it is read, and stores it at
// the new version only when it is next written. Kubernetes' own answer is
// the StorageVersionMigration API; it needs a feature gate and a
// controller in kube-controller-manager that most clusters do not run, so
// this package does what that controller does, with the kind's own client
// (engine/kube): each object written back as it was read, a PUT under its
// resourceVersion precondition. The API server encodes the write at the
// storage version, and a write whose bytes equal what etcd holds (an object
// already at that version) is not written at all, so a migration run twice
// writes nothing the second time.
//
// # Flow
//
// Migrate, for one CRD: read it; done when storedVersions is the storage
// version alone. Else set the CRD's StorageMigrated condition to False,
// list the objects (pages of 500) and write each back, paced by a rate
// limiter; a conflict or a NotFound means someone else wrote or deleted the
// object since the list, which stores it at the new version too, so it is
// skipped. Every 100 objects, and at the end, the progress (the last object
// written, by namespace/name, the order the API server lists in) is kept in
// an annotation of the CRD, so that a migration stopped by a restart goes on
// where it stopped. Then storedVersions is set to the storage version, the
// condition to True, and the annotation removed. Every step is an Event on
// the CRD; Observer counts objects and runs (engine/metrics).
//
// An object the API server refuses to write back (a schema that no longer
// admits it, a webhook that fails) stops the migration: its condition and
// Event name the object and the error, and the next run starts from it.
package migrate
