package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/controller"
	"github.com/tmplop/operator/engine/crd"
	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/migrate"
)

type migrateFlags struct {
	templates  string
	kubeconfig string
	rate       float64
}

// NewMigrateCommand moves the stored objects of CRDs to their storage
// version, as run --install-crds does by itself: for clusters whose CRDs
// someone else installs (operator crd's output, applied by GitOps).
func NewMigrateCommand(out io.Writer) *cobra.Command {
	f := &migrateFlags{}
	cmd := &cobra.Command{
		Use:   "migrate [CRD...] [--templates DIR]",
		Short: "Move the stored objects of CRDs to their storage version, then prune status.storedVersions",
		Long: `migrate writes every object of each CRD named (or of each kind folder of --templates with
several versions) back as it is read, so that the API server stores it at the CRD's storage version,
paced at --storage-migration-rate objects a second; then it sets the CRD's status.storedVersions to
the storage version alone, so that an old version can be dropped from the CRD. It is what run
--install-crds does after it installs a CRD whose storage version changed; run it where the CRDs are
installed by someone else (operator crd's output, applied by a GitOps tool), once the new CRD is
applied. It runs as the kubeconfig's identity, which needs get, list and update on the objects and
get and update on customresourcedefinitions and their status. A CRD whose objects are all at the
storage version costs one read. A migration stopped half way goes on, at the next run (of migrate
or of run --install-crds), after the last object it wrote: its progress is kept on the CRD. See
docs/versions.md.`,
		Example: "  operator migrate memcacheds.cache.example.com\n  operator migrate --templates templates",
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMigrate(cmd.Context(), out, f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.templates, "templates", "", "also migrate the CRD of each kind folder of this directory (or this one folder) that has several versions")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
	fl.Float64Var(&f.rate, "storage-migration-rate", migrate.DefaultRate, "objects a second written back")
	return cmd
}

func runMigrate(ctx context.Context, out io.Writer, f *migrateFlags, names []string) error {
	if f.templates != "" {
		more, err := versionedCRDs(f.templates)
		if err != nil {
			return err
		}
		if len(more) == 0 {
			fmt.Fprintf(out, "%s: no kind folder has several versions\n", f.templates)
		}
		names = append(names, more...)
	}
	if len(names) == 0 {
		return errors.New("name a CRD, or give --templates")
	}
	cfg, _, err := restConfig(f.kubeconfig)
	if err != nil {
		return err
	}
	cfg.UserAgent = "operator-migrate/" + version
	client, err := kube.New(cfg, "operator-migrate")
	if err != nil {
		return err
	}
	recorder, stop := controller.NewEventRecorderForClient(ctx, client, "operator-migrate")
	defer stop() // flushes the Events
	m := migrate.New(client, recorder, f.rate, nil)
	var failed []error
	for _, name := range names {
		res, err := m.Migrate(ctx, name)
		switch {
		case err != nil:
			failed = append(failed, fmt.Errorf("%s: %w", name, err))
			fmt.Fprintf(out, "%s: failed after %d objects written: %v\n", name, res.Written, err)
		case !res.Needed:
			fmt.Fprintf(out, "%s: every object is at the storage version\n", name)
		default:
			fmt.Fprintf(out, "%s: %d objects written back, %d skipped (written or deleted meanwhile); storedVersions is the storage version alone\n",
				name, res.Written, res.Skipped)
		}
	}
	return errors.Join(failed...)
}

// versionedCRDs are the names of the CRDs of the kind folders of dir (or
// of dir, one folder) that have several versions.
func versionedCRDs(dir string) ([]string, error) {
	var kinds []*catalog.Kind
	if catalog.IsFolder(dir) {
		k, err := catalog.LoadKind(dir)
		if err != nil {
			return nil, err
		}
		kinds = []*catalog.Kind{k}
	} else {
		loaded, skipped, err := catalog.Load(dir)
		if err != nil {
			return nil, err
		}
		if len(skipped) > 0 {
			// A folder that does not load may be one of several versions:
			// migrating the others and saying nothing of it would leave
			// its objects where they are.
			return nil, skipped[0]
		}
		kinds = loaded
	}
	var out []string
	for _, k := range kinds {
		if k.Converter() == nil {
			continue
		}
		c, err := crd.ForKind(k)
		if err != nil {
			return nil, fmt.Errorf("folder %s: %w", k.Name, err)
		}
		if c == nil {
			continue // the kind's CRD is not the folder's to make
		}
		out = append(out, c.Name)
	}
	slices.Sort(out)
	return out, nil
}
