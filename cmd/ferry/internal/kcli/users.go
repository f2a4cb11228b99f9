package kcli

import (
	"context"
	"crypto/rand"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ferry-mq/ferry/server/auth"
)

// UserCredential is one user's credential for one mechanism, as listed.
type UserCredential struct {
	User       string
	Mechanism  auth.ScramMechanism
	Iterations int
}

// CreateUser sets a user's SCRAM password for m through a broker
// (AlterUserScramCredentials). The password is salted here, as Kafka's
// kafka-configs.sh does: only the salted password crosses the network.
func CreateUser(ctx context.Context, adm *kadm.Client, user string, m auth.ScramMechanism, iterations int, password string) error {
	salt := make([]byte, 32)
	if _, err := rand.Read(salt); err != nil {
		return err
	}
	salted, err := auth.SaltedPassword(m, password, salt, iterations)
	if err != nil {
		return err
	}
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: user, Mechanism: kadm.ScramMechanism(m),
		Iterations: int32(iterations), Salt: salt, SaltedPassword: salted}})
	return alterErr(user, res, err)
}

// DeleteUser removes a user's credentials for mechs through a broker.
func DeleteUser(ctx context.Context, adm *kadm.Client, user string, mechs []auth.ScramMechanism) error {
	var dels []kadm.DeleteSCRAM
	for _, m := range mechs {
		dels = append(dels, kadm.DeleteSCRAM{User: user, Mechanism: kadm.ScramMechanism(m)})
	}
	res, err := adm.AlterUserSCRAMs(ctx, dels, nil)
	return alterErr(user, res, err)
}

func alterErr(user string, res kadm.AlteredUserSCRAMs, err error) error {
	if err != nil {
		return err
	}
	if r, ok := res[user]; ok && r.Err != nil {
		if r.ErrMessage != "" {
			return fmt.Errorf("user %q: %w: %s", user, r.Err, r.ErrMessage)
		}
		return fmt.Errorf("user %q: %w", user, r.Err)
	}
	return nil
}

// ListUsers describes users' credentials through a broker: the named
// ones, or all.
func ListUsers(ctx context.Context, adm *kadm.Client, users ...string) ([]UserCredential, error) {
	described, err := adm.DescribeUserSCRAMs(ctx, users...)
	if err != nil {
		return nil, err
	}
	var out []UserCredential
	for _, d := range described.Sorted() {
		if d.Err != nil {
			return out, fmt.Errorf("user %q: %w: %s", d.User, d.Err, d.ErrMessage)
		}
		for _, c := range d.CredInfos {
			out = append(out, UserCredential{User: d.User, Mechanism: auth.ScramMechanism(c.Mechanism), Iterations: int(c.Iterations)})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].User != out[j].User {
			return out[i].User < out[j].User
		}
		return out[i].Mechanism < out[j].Mechanism
	})
	return out, nil
}
