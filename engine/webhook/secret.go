package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/kube"
)

// Retries of a failed write of the Secret (not a conflict: that is read
// again at once): from a few seconds, doubling, to a few minutes.
const (
	retryMin = 2 * time.Second
	retryMax = 5 * time.Minute
)

// conflictAttempts bounds the read-decide-write rounds of one look: each
// conflict means another replica wrote the Secret since we read it, so
// what it wrote is read and judged again, a few times at most.
const conflictAttempts = 5

// keeper keeps the webhook's chain in a Secret that every replica shares:
// it creates the Secret when none exists, renews and rolls what it holds
// when due, and serves what the Secret holds as its watch delivers it, so
// that every replica serves the chain any of them wrote.
type keeper struct {
	client   *kube.Client
	ns, name string
	policy   policy
	now      func() time.Time

	// current is the chain served: the last one the watch delivered that
	// holds a certificate and its key.
	current atomic.Pointer[chain]
	// latest is the Secret as the watch last delivered it, nil once
	// deleted.
	latest atomic.Pointer[corev1.Secret]
	// wake asks the loop to look at the Secret again (cap 1: coalesced).
	wake chan struct{}
	// served is closed when a chain is first served.
	served     chan struct{}
	servedOnce sync.Once
	// onBundle is called when the CA bundle served changes.
	onBundle func()
}

// start makes sure the Secret exists and holds a usable chain, starts its
// watch and the loop that renews it, and returns once a chain is served.
func (k *keeper) start(ctx context.Context) error {
	log := klog.FromContext(ctx).WithValues("secret", klog.KRef(k.ns, k.name))
	if _, err := k.look(ctx); err != nil {
		return fmt.Errorf("webhook certificate in Secret %s/%s: %w", k.ns, k.name, err)
	}
	_, inf := cache.NewInformerWithOptions(cache.InformerOptions{
		Logger: &log, ListerWatcher: k.client.SecretListWatch(k.ns, k.name), ObjectType: &corev1.Secret{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { k.observe(ctx, obj) },
			UpdateFunc: func(_, obj any) { k.observe(ctx, obj) },
			DeleteFunc: func(any) {
				log.Info("Webhook Secret deleted; making it again, serving the previous certificate meanwhile")
				k.latest.Store(nil)
				k.poke()
			},
		},
	})
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("watch the webhook's Secret %s/%s: %w", k.ns, k.name, context.Cause(ctx))
	}
	go k.loop(ctx)
	select {
	case <-k.served:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("webhook certificate in Secret %s/%s: none served: %w", k.ns, k.name, context.Cause(ctx))
	}
}

func (k *keeper) poke() {
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

// observe serves what the Secret holds, when it holds a certificate and
// its key, and wakes the loop to judge it.
func (k *keeper) observe(ctx context.Context, obj any) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return
	}
	k.latest.Store(s)
	defer k.poke()
	log := klog.FromContext(ctx).WithValues("secret", klog.KObj(s), "resourceVersion", s.ResourceVersion)
	c, err := parseChain(s.Data)
	if c == nil || c.cert == nil {
		// The loop writes a usable chain; meanwhile the previous one serves.
		log.Error(err, "Webhook Secret holds no usable certificate; serving the previous one")
		return
	}
	prev := k.current.Swap(c)
	k.servedOnce.Do(func() { close(k.served) })
	if prev != nil && bytes.Equal(prev.data[SecretCertKey], c.data[SecretCertKey]) && bytes.Equal(prev.bundle(), c.bundle()) {
		return
	}
	log.Info("Serving the webhook certificate of the Secret", "notAfter", c.leaf.NotAfter.UTC().Format(time.RFC3339),
		"serial", c.leaf.SerialNumber.Text(16), "cas", len(c.cas))
	if (prev == nil || !bytes.Equal(prev.bundle(), c.bundle())) && k.onBundle != nil {
		k.onBundle()
	}
}

// loop looks at the Secret when it changes, when what it holds is due
// for renewal, and again after a failed write, until ctx is done.
func (k *keeper) loop(ctx context.Context) {
	log := klog.FromContext(ctx).WithValues("secret", klog.KRef(k.ns, k.name))
	timer := time.NewTimer(0)
	defer timer.Stop()
	retry := retryMin
	for {
		select {
		case <-ctx.Done():
			return
		case <-k.wake:
		case <-timer.C:
		}
		recheck, err := k.look(ctx)
		var wait time.Duration
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			log.Error(err, "Webhook certificate not renewed; trying again", "after", retry.String())
			wait, retry = retry, min(2*retry, retryMax)
		} else {
			retry = retryMin
			wait = max(recheck.Sub(k.now()), 0)
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
	}
}

// look reads the Secret (from the watch when it has it, else live),
// writes what the policy says it should hold, and returns when to look
// again. A conflict (another replica wrote it first) reads it again and
// judges what that replica wrote.
func (k *keeper) look(ctx context.Context) (time.Time, error) {
	s := k.latest.Load()
	for range conflictAttempts {
		if s == nil {
			var err error
			if s, err = k.client.GetSecret(ctx, k.ns, k.name); apierrors.IsNotFound(err) {
				s, err = k.create(ctx)
				if apierrors.IsAlreadyExists(err) {
					s = nil // another replica made it: read it
					continue
				}
			}
			if err != nil {
				return time.Time{}, err
			}
		}
		recheck, err := k.renew(ctx, s)
		if apierrors.IsConflict(err) {
			s = nil
			continue
		}
		return recheck, err
	}
	return time.Time{}, fmt.Errorf("%d conflicting writes in a row", conflictAttempts)
}

// create makes the Secret: a new chain, or, when it was deleted while a
// chain is served, that chain with a new CA rolled in (policy.remake).
func (k *keeper) create(ctx context.Context) (*corev1.Secret, error) {
	data, why, err := k.policy.remake(k.current.Load(), k.now())
	if err != nil {
		return nil, err
	}
	s, err := k.client.CreateSecret(ctx, k.ns, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: k.name, Namespace: k.ns, Labels: map[string]string{
			"app.kubernetes.io/managed-by": "tmplop-operator", "app.kubernetes.io/component": "conversion-webhook",
		}},
		Type: secretTypeTLS,
		Data: data,
	})
	if err == nil {
		klog.FromContext(ctx).Info("Webhook certificate made", "secret", klog.KObj(s), "resourceVersion", s.ResourceVersion, "why", why)
	}
	return s, err
}

// renew writes what s should hold now, under s's resourceVersion, when it
// differs from what it holds.
func (k *keeper) renew(ctx context.Context, s *corev1.Secret) (time.Time, error) {
	log := klog.FromContext(ctx).WithValues("secret", klog.KObj(s))
	cur, perr := parseChain(s.Data)
	data, why, recheck, err := k.policy.next(cur, k.now())
	if err != nil || data == nil {
		return recheck, err
	}
	if perr != nil {
		log.Info("Webhook Secret holds no usable chain; writing one", "reason", perr.Error())
	}
	upd := s.DeepCopy()
	upd.Data = data
	out, err := k.client.UpdateSecret(ctx, k.ns, upd)
	if err != nil {
		if apierrors.IsConflict(err) {
			log.V(1).Info("Webhook Secret written by another replica meanwhile; reading it again", "why", why)
		}
		return time.Time{}, err
	}
	log.Info("Webhook certificate written", "why", why, "resourceVersion", out.ResourceVersion)
	// Judge what was written at once (its next moment), without waiting
	// for the watch to deliver it.
	c, err := parseChain(out.Data)
	if c == nil || c.cert == nil {
		return time.Time{}, errors.Join(errors.New("the chain written does not parse"), err)
	}
	_, _, recheck, err = k.policy.next(c, k.now())
	return recheck, err
}
