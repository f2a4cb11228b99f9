package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ferry-mq/ferry/cmd/ferry/internal/kcli"
)

// adminTimeout bounds one administrative command (topics, groups).
const adminTimeout = 30 * time.Second

// errUsage marks a command-line mistake; main exits 2 for it.
var errUsage = errors.New("usage")

func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

// newClientFlags returns a flag set with --bootstrap and the SASL flags,
// which every client subcommand shares.
func newClientFlags(name string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("ferry "+name, flag.ContinueOnError)
	def := os.Getenv("FERRY_BOOTSTRAP")
	if def == "" {
		def = "localhost:9092"
	}
	bootstrap := fs.String("bootstrap", def, "Kafka bootstrap brokers, host:port[,host:port…] (env FERRY_BOOTSTRAP)")
	addSaslFlags(fs, &kcli.DefaultAuth)
	addTLSFlags(fs)
	return fs, bootstrap
}

// addSaslFlags adds --sasl-mechanism, --sasl-username and
// --sasl-password-file (each also FERRY_SASL_* in the environment).
func addSaslFlags(fs *flag.FlagSet, a *kcli.Auth) {
	fs.StringVar(&a.Mechanism, "sasl-mechanism", os.Getenv("FERRY_SASL_MECHANISM"), "authenticate with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (env FERRY_SASL_MECHANISM)")
	fs.StringVar(&a.User, "sasl-username", os.Getenv("FERRY_SASL_USERNAME"), "SASL user name (env FERRY_SASL_USERNAME)")
	fs.StringVar(&a.PasswordFile, "sasl-password-file", os.Getenv("FERRY_SASL_PASSWORD_FILE"), "file whose first line is the SASL password (env FERRY_SASL_PASSWORD_FILE)")
}

// addTLSFlags adds the flags for an SSL listener; they set kcli.TLS,
// which every client of the command dials with.
func addTLSFlags(fs *flag.FlagSet) {
	fs.BoolVar(&kcli.TLS.Enable, "tls", os.Getenv("FERRY_TLS") == "true", "connect over TLS, to an SSL listener (env FERRY_TLS)")
	fs.StringVar(&kcli.TLS.CAFile, "tls-ca-file", os.Getenv("FERRY_TLS_CA_FILE"), "PEM CA certificates the brokers' certificates must chain to (default: the system's) (env FERRY_TLS_CA_FILE)")
	fs.StringVar(&kcli.TLS.CertFile, "tls-cert-file", os.Getenv("FERRY_TLS_CERT_FILE"), "PEM client certificate, for listeners with ssl.client.auth (env FERRY_TLS_CERT_FILE)")
	fs.StringVar(&kcli.TLS.KeyFile, "tls-key-file", os.Getenv("FERRY_TLS_KEY_FILE"), "PEM private key of --tls-cert-file (env FERRY_TLS_KEY_FILE)")
}

// parseArgs parses flags placed before, between or after positional
// arguments (`ferry topics create NAME --partitions 3`), and returns the
// positional ones. Everything after "--" is positional.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %w", errUsage, err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// wantArgs checks the count of positional arguments.
func wantArgs(args []string, min, max int, what string) error {
	if len(args) < min || len(args) > max {
		return usageErr("want %s, got %q", what, args)
	}
	return nil
}

// keyValues is a repeatable --config k=v flag.
type keyValues map[string]string

func (kv keyValues) String() string {
	var s []string
	for k, v := range kv {
		s = append(s, k+"="+v)
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}

func (kv keyValues) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: want key=value", s)
	}
	kv[k] = v
	return nil
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

// signalContext ends on SIGINT or SIGTERM, so a consumer interrupted with
// ^C still commits and leaves its group.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
}

// adminContext is signalContext bounded by adminTimeout.
func adminContext() (context.Context, context.CancelFunc) {
	ctx, stop := signalContext()
	ctx, cancel := context.WithTimeout(ctx, adminTimeout)
	return ctx, func() { cancel(); stop() }
}

// subcommand dispatches args[0] to one of cmds.
func subcommand(group string, args []string, cmds map[string]func([]string) error) error {
	if len(args) == 0 {
		return usageErr("ferry %s: want one of %s", group, commandNames(cmds))
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Printf("Usage: ferry %s COMMAND [flags]\n\nCommands: %s\n\nferry %s COMMAND -h prints the flags of one.\n",
			group, commandNames(cmds), group)
		return flag.ErrHelp
	}
	run, ok := cmds[args[0]]
	if !ok {
		return usageErr("ferry %s: unknown command %q; want one of %s", group, args[0], commandNames(cmds))
	}
	return run(args[1:])
}

func commandNames(cmds map[string]func([]string) error) string {
	var names []string
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// withAdmin runs fn with an admin client of bootstrap, bounded by
// adminTimeout and interrupted by SIGINT/SIGTERM.
func withAdmin(bootstrap string, fn func(context.Context, *kadm.Client) error) error {
	ctx, cancel := adminContext()
	defer cancel()
	adm, err := kcli.DialAdmin(ctx, bootstrap)
	if err != nil {
		return err
	}
	defer adm.Close()
	return fn(ctx, adm)
}
