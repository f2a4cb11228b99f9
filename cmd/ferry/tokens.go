package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ferry-mq/ferry/cmd/ferry/internal/kcli"
	"github.com/ferry-mq/ferry/replication/zookeeper"
	"github.com/ferry-mq/ferry/server/auth"
)

// runTokens is `ferry tokens create|list|revoke`: the HTTP gateway's API
// tokens, through a running node's HTTP API (--url, as a user with a
// password), or offline in a stopped single node's data dir (--data-dir)
// or a cluster's ZooKeeper (--zookeeper; every broker picks it up).
func runTokens(args []string) error {
	return subcommand("tokens", args, map[string]func([]string) error{
		"create": tokensCreate,
		"list":   tokensList,
		"revoke": tokensRevoke,
	})
}

type tokenFlags struct {
	url, user, passwordFile string
	dataDir, zookeeper      string
}

func newTokenFlags(name string) (*flag.FlagSet, *tokenFlags) {
	fs := flag.NewFlagSet("ferry "+name, flag.ContinueOnError)
	f := &tokenFlags{}
	fs.StringVar(&f.url, "url", envOr("FERRY_URL", "http://localhost:8080"), "a node's HTTP address (FERRY_URL)")
	fs.StringVar(&f.user, "http-user", os.Getenv("FERRY_HTTP_USER"), "the user to log in to --url as (FERRY_HTTP_USER)")
	fs.StringVar(&f.passwordFile, "password-file", os.Getenv("FERRY_HTTP_PASSWORD_FILE"), "file whose first line is that user's password (default: read stdin)")
	fs.StringVar(&f.dataDir, "data-dir", "", "change a stopped single node's data dir instead of asking a node")
	fs.StringVar(&f.zookeeper, "zookeeper", "", "change a cluster's ZooKeeper (host:port[/chroot]) instead of asking a node")
	return fs, f
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// offline opens the store --data-dir or --zookeeper names; nil: neither.
func (f *tokenFlags) offline() (auth.TokenStore, func(), error) {
	switch {
	case f.dataDir != "" && f.zookeeper != "":
		return nil, nil, usageErr("--data-dir and --zookeeper: give one")
	case f.dataDir != "":
		s, err := auth.OpenTokenFileStore(f.dataDir)
		return s, func() {}, err
	case f.zookeeper != "":
		zk, err := zookeeper.Open(f.zookeeper, 10*time.Second, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			return nil, nil, fmt.Errorf("--zookeeper %s: %w", f.zookeeper, err)
		}
		s, err := auth.OpenZKTokenStore(zk, slog.New(slog.DiscardHandler))
		if err != nil {
			zk.Close()
			return nil, nil, err
		}
		return s, func() { s.Close(); zk.Close() }, nil
	}
	return nil, nil, nil
}

// call sends one request to --url as --user and decodes the answer.
func (f *tokenFlags) call(method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, strings.TrimRight(f.url, "/")+path, rd)
	if err != nil {
		return usageErr("--url: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if f.user != "" {
		var password string
		if f.passwordFile != "" {
			password, err = kcli.ReadPasswordFile(f.passwordFile)
		} else {
			password, err = kcli.ReadPassword(os.Stdin)
		}
		if err != nil {
			return err
		}
		req.SetBasicAuth(f.user, password)
	}
	res, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(res.Body, 4<<20))
	if res.StatusCode >= 300 {
		var e struct{ Message string }
		if json.Unmarshal(data, &e) == nil && e.Message != "" {
			return fmt.Errorf("%s %s: %s (HTTP %d)", method, path, e.Message, res.StatusCode)
		}
		return fmt.Errorf("%s %s: HTTP %d", method, path, res.StatusCode)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

type tokenListing struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	User      string     `json:"user"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at"`
	Token     string     `json:"token"`
}

func tokensCreate(args []string) error {
	fs, f := newTokenFlags("tokens create NAME")
	user := fs.String("user", "", "the user the token acts as (default: --http-user; offline: required)")
	expires := fs.Duration("expires-in", 0, "lifetime, like 720h (default: never expires)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, 1, "one token NAME"); err != nil {
		return err
	}
	store, closeStore, err := f.offline()
	if err != nil {
		return err
	}
	var made tokenListing
	if store != nil {
		defer closeStore()
		if *user == "" {
			return usageErr("--user USER: offline, say which user the token acts as")
		}
		token, stored, err := auth.NewAPIToken(pos[0], *user, *expires, time.Now())
		if err != nil {
			return usageErr("%v", err)
		}
		if err := store.Add(stored); err != nil {
			return err
		}
		made = tokenListing{ID: stored.ID, User: stored.User, Token: token}
	} else if err := f.call("POST", "/admin/tokens", map[string]any{"name": pos[0], "user": *user,
		"expires_in_ms": expires.Milliseconds()}, &made); err != nil {
		return err
	}
	// The token goes to stdout alone, for scripts; the rest to stderr.
	fmt.Fprintf(os.Stderr, "ferry: token %s for User:%s; it is shown only now\n", made.ID, made.User)
	fmt.Println(made.Token)
	return nil
}

func tokensList(args []string) error {
	fs, f := newTokenFlags("tokens list")
	if _, err := parseArgs(fs, args); err != nil {
		return err
	}
	store, closeStore, err := f.offline()
	if err != nil {
		return err
	}
	var list []tokenListing
	if store != nil {
		defer closeStore()
		for _, t := range store.List() {
			l := tokenListing{ID: t.ID, Name: t.Name, User: t.User, CreatedAt: t.CreatedAt}
			if !t.ExpiresAt.IsZero() {
				e := t.ExpiresAt
				l.ExpiresAt = &e
			}
			list = append(list, l)
		}
	} else if err := f.call("GET", "/admin/tokens", nil, &list); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tUSER\tCREATED\tEXPIRES")
	for _, t := range list {
		expires := "never"
		if t.ExpiresAt != nil {
			expires = t.ExpiresAt.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, t.User, t.CreatedAt.Format(time.RFC3339), expires)
	}
	return tw.Flush()
}

func tokensRevoke(args []string) error {
	fs, f := newTokenFlags("tokens revoke ID")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, 1, "one token ID"); err != nil {
		return err
	}
	store, closeStore, err := f.offline()
	if err != nil {
		return err
	}
	if store == nil {
		return f.call("DELETE", "/admin/tokens/"+pos[0], nil, nil)
	}
	defer closeStore()
	found, err := store.Revoke(pos[0])
	if err == nil && !found {
		err = fmt.Errorf("no API token %s", pos[0])
	}
	return err
}
