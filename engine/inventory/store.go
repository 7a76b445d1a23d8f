package inventory

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ConfigMaps is what a Store asks of the cluster: the door's ConfigMap
// calls (kube.Client), whose errors are marked as every call through the
// door is, so that a reconcile that fails on the inventory is classified
// as one that fails on a child (a Forbidden is terminal in both).
type ConfigMaps interface {
	GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	PatchConfigMap(ctx context.Context, namespace, name string, pt types.PatchType, data []byte) (*corev1.ConfigMap, error)
	CreateConfigMap(ctx context.Context, namespace string, cm *corev1.ConfigMap) (*corev1.ConfigMap, error)
}

// Store is the record of one operator instance, in the ConfigMap
// namespace/name.
type Store struct {
	client    ConfigMaps
	namespace string
	name      string

	mu       sync.Mutex
	loaded   bool
	recorded map[string]bool // keys as in key()
}

// Name is the inventory ConfigMap's name for a field manager.
func Name(fieldManager string) (string, error) {
	name := strings.ToLower(fieldManager) + "-inventory"
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return "", fmt.Errorf("field manager %q: cannot name the inventory ConfigMap %q: %s", fieldManager, name, strings.Join(errs, "; "))
	}
	return name, nil
}

// ConfigMap is the inventory as it is first created, empty: by the
// operator on first use, or ahead of time by its installer (`operator
// rbac` writes it), so that the operator's Role needs no create on
// ConfigMaps, a right RBAC cannot restrict by name.
func ConfigMap(namespace, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"app.kubernetes.io/component": "inventory"},
			Annotations: map[string]string{"operator.tmplop.io/about": "the kinds of children each kind has applied: the scope of pruning; do not edit"}},
	}
}

// New returns a Store in the ConfigMap namespace/name, through client.
func New(client ConfigMaps, namespace, name string) *Store {
	return &Store{client: client, namespace: namespace, name: name, recorded: map[string]bool{}}
}

// Name is the ConfigMap's name.
func (s *Store) Name() string { return s.name }

// key names the record of child kinds under parent kinds. Kinds and API
// groups never hold '_', and both are valid ConfigMap key characters.
func key(parent, child schema.GroupKind) string { return parent.String() + "_" + child.String() }

// ChildKinds returns the kinds of children recorded for parent, sorted.
func (s *Store) ChildKinds(ctx context.Context, parent schema.GroupKind) ([]schema.GroupKind, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(ctx); err != nil {
		return nil, err
	}
	prefix := parent.String() + "_"
	var out []schema.GroupKind
	for k := range s.recorded {
		if child, ok := strings.CutPrefix(k, prefix); ok {
			out = append(out, schema.ParseGroupKind(child))
		}
	}
	slices.SortFunc(out, func(a, b schema.GroupKind) int { return strings.Compare(a.String(), b.String()) })
	return out, nil
}

// Record adds children to the kinds recorded for parent, writing only
// when one is new.
func (s *Store) Record(ctx context.Context, parent schema.GroupKind, children []schema.GroupKind) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(ctx); err != nil {
		return err
	}
	add := map[string]string{}
	for _, c := range children {
		if k := key(parent, c); !s.recorded[k] {
			add[k] = "recorded"
		}
	}
	if len(add) == 0 {
		return nil
	}
	if err := s.add(ctx, add); err != nil {
		return fmt.Errorf("record child kinds of %s in ConfigMap %s: %w", parent, s.name, err)
	}
	for k := range add {
		s.recorded[k] = true
	}
	return nil
}

func (s *Store) load(ctx context.Context) error {
	if s.loaded {
		return nil
	}
	cm, err := s.client.GetConfigMap(ctx, s.namespace, s.name)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("read ConfigMap %s: %w", s.name, err)
	default:
		for k := range cm.Data {
			s.recorded[k] = true
		}
	}
	s.loaded = true
	return nil
}

// add merges keys into the ConfigMap, creating it on first use. A merge
// patch only adds: keys written by another replica or kind stay.
func (s *Store) add(ctx context.Context, data map[string]string) error {
	patch, err := json.Marshal(map[string]any{"data": data})
	if err != nil {
		return err
	}
	for range 2 {
		_, err = s.client.PatchConfigMap(ctx, s.namespace, s.name, types.MergePatchType, patch)
		if !apierrors.IsNotFound(err) {
			return err
		}
		cm := ConfigMap("", s.name)
		cm.Data = data
		_, err = s.client.CreateConfigMap(ctx, s.namespace, cm)
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
		// Created meanwhile by another writer: patch it.
	}
	return err
}
