package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ferry-mq/ferry/cmd/ferry/internal/kcli"
	"github.com/ferry-mq/ferry/replication/zookeeper"
	"github.com/ferry-mq/ferry/server/auth"
)

// runUsers is `ferry users create|list|delete`: SCRAM credentials through
// a running broker (--bootstrap), or offline in a single node's data dir
// (--data-dir, while the node is stopped: a running node would not see
// the change and overwrites the file on its next one) or in a cluster's
// ZooKeeper (--zookeeper; every broker picks the change up).
func runUsers(args []string) error {
	return subcommand("users", args, map[string]func([]string) error{
		"create": usersCreate,
		"list":   usersList,
		"delete": usersDelete,
	})
}

// userStoreFlags are the offline alternatives to --bootstrap.
type userStoreFlags struct {
	bootstrap          *string
	dataDir, zookeeper string
}

func newUserFlags(name string) (*flag.FlagSet, *userStoreFlags) {
	fs, bootstrap := newClientFlags(name)
	f := &userStoreFlags{bootstrap: bootstrap}
	fs.StringVar(&f.dataDir, "data-dir", "", "change a stopped single node's data dir instead of asking a broker")
	fs.StringVar(&f.zookeeper, "zookeeper", "", "change a cluster's ZooKeeper (host:port[/chroot]) instead of asking a broker")
	return fs, f
}

// offline opens the store named by --data-dir or --zookeeper; nil when
// neither is given (ask the broker at --bootstrap). writes: the command
// changes it.
func (f *userStoreFlags) offline(writes bool) (auth.CredentialStore, func(), error) {
	switch {
	case f.dataDir != "" && f.zookeeper != "":
		return nil, nil, usageErr("--data-dir and --zookeeper: give one")
	case f.dataDir != "":
		if _, err := os.Stat(filepath.Join(f.dataDir, "ferry-topics.json")); err == nil && writes {
			// Nothing can tell a running node from a stopped one here.
			fmt.Fprintln(os.Stderr, "ferry: note: this data dir has served before; a node running on it now does not see the change and may overwrite it: stop it first, or use --bootstrap")
		}
		s, err := auth.OpenFileStore(f.dataDir)
		return s, func() {}, err
	case f.zookeeper != "":
		zk, err := zookeeper.Open(f.zookeeper, 10*time.Second, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			return nil, nil, fmt.Errorf("--zookeeper %s: %w", f.zookeeper, err)
		}
		s, err := auth.OpenZKUserStore(zk, slog.New(slog.DiscardHandler))
		if err != nil {
			zk.Close()
			return nil, nil, err
		}
		return s, func() { zk.Close() }, nil
	}
	return nil, nil, nil
}

func usersCreate(args []string) error {
	fs, target := newUserFlags("users create NAME")
	mechanism := fs.String("mechanism", "SCRAM-SHA-256", "SCRAM-SHA-256 or SCRAM-SHA-512 (PLAIN logins check either)")
	iterations := fs.Int("iterations", auth.DefaultScramIterations, "SCRAM iterations, 4096 to 16384")
	passwordFile := fs.String("password-file", "", "file whose first line is the password (default: read stdin)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, 1, "one user NAME"); err != nil {
		return err
	}
	name := pos[0]
	if err := auth.CheckUserName(name); err != nil {
		return usageErr("%v", err)
	}
	m, err := auth.ParseScramMechanism(*mechanism)
	if err != nil {
		return usageErr("--mechanism: %v", err)
	}
	var password string
	if *passwordFile != "" {
		password, err = kcli.ReadPasswordFile(*passwordFile)
	} else {
		password, err = kcli.ReadPassword(os.Stdin)
	}
	if err != nil {
		return err
	}
	store, closeStore, err := target.offline(true)
	if err != nil {
		return err
	}
	if store != nil {
		defer closeStore()
		cred, err := auth.NewScramCredential(m, password, *iterations)
		if err != nil {
			return usageErr("%v", err)
		}
		return store.Upsert(name, cred)
	}
	return withAdmin(*target.bootstrap, func(ctx context.Context, adm *kadm.Client) error {
		return kcli.CreateUser(ctx, adm, name, m, *iterations, password)
	})
}

func usersList(args []string) error {
	fs, target := newUserFlags("users list [NAME…]")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	store, closeStore, err := target.offline(false)
	if err != nil {
		return err
	}
	var creds []kcli.UserCredential
	if store != nil {
		defer closeStore()
		creds, err = storedCredentials(store, pos)
	} else {
		err = withAdmin(*target.bootstrap, func(ctx context.Context, adm *kadm.Client) error {
			creds, err = kcli.ListUsers(ctx, adm, pos...)
			return err
		})
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	for _, c := range creds {
		fmt.Fprintf(tw, "%s\t%s\titerations=%d\n", c.User, c.Mechanism, c.Iterations)
	}
	tw.Flush()
	return err
}

func storedCredentials(store auth.CredentialStore, names []string) ([]kcli.UserCredential, error) {
	if len(names) == 0 {
		names = store.Users()
	}
	var out []kcli.UserCredential
	for _, n := range names {
		u := store.User(n)
		if len(u) == 0 {
			return out, fmt.Errorf("user %q: %w", n, auth.ErrUnknownUser)
		}
		for _, m := range []auth.ScramMechanism{auth.ScramSHA256, auth.ScramSHA512} {
			if c, ok := u[m]; ok {
				out = append(out, kcli.UserCredential{User: n, Mechanism: m, Iterations: c.Iterations})
			}
		}
	}
	return out, nil
}

func usersDelete(args []string) error {
	fs, target := newUserFlags("users delete NAME")
	mechanism := fs.String("mechanism", "", "delete only this mechanism's credential (default: all the user's)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, 1, "one user NAME"); err != nil {
		return err
	}
	name := pos[0]
	var only []auth.ScramMechanism
	if *mechanism != "" {
		m, err := auth.ParseScramMechanism(*mechanism)
		if err != nil {
			return usageErr("--mechanism: %v", err)
		}
		only = []auth.ScramMechanism{m}
	}
	store, closeStore, err := target.offline(true)
	if err != nil {
		return err
	}
	if store != nil {
		defer closeStore()
		mechs := only
		if mechs == nil {
			for m := range store.User(name) {
				mechs = append(mechs, m)
			}
		}
		if len(mechs) == 0 {
			return fmt.Errorf("user %q: %w", name, auth.ErrUnknownUser)
		}
		var errs []error
		for _, m := range mechs {
			errs = append(errs, store.Delete(name, m))
		}
		return errors.Join(errs...)
	}
	return withAdmin(*target.bootstrap, func(ctx context.Context, adm *kadm.Client) error {
		mechs := only
		if mechs == nil {
			creds, err := kcli.ListUsers(ctx, adm, name)
			if err != nil {
				return err
			}
			for _, c := range creds {
				mechs = append(mechs, c.Mechanism)
			}
		}
		return kcli.DeleteUser(ctx, adm, name, mechs)
	})
}
