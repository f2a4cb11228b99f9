package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
)

// configEntity is one --entity-type with its --entity-name or
// --entity-default (name nil, def true), in command-line order.
type configEntity struct {
	typ  string // topics, brokers, users, clients, ips
	name *string
	def  bool
}

// configEntities collects kafka-configs.sh's entity options, long and
// short forms (--topic t is --entity-type topics --entity-name t).
type configEntities struct{ list []configEntity }

func (c *configEntities) register(t *kafkaTool) {
	add := func(name, meta, usage string, set func(string) error) {
		t.fs.Func(name, usage, set)
		t.add(name, meta)
	}
	addBool := func(name, usage string, set func() error) {
		t.fs.BoolFunc(name, usage, func(string) error { return set() })
		t.add(name, "")
	}
	add("entity-type", "String", "Type of entity (topics/clients/users/brokers/ips)", func(s string) error {
		switch s {
		case "topics", "clients", "users", "brokers", "ips", "broker-loggers":
		default:
			return fmt.Errorf("Invalid entity type %s, the entity type must be one of topics, clients, users, brokers, ips, broker-loggers", s)
		}
		c.list = append(c.list, configEntity{typ: s})
		return nil
	})
	add("entity-name", "String", "Name of entity (topic name/client id/user principal name/broker id/ip)", func(s string) error {
		if len(c.list) == 0 || c.list[len(c.list)-1].name != nil || c.list[len(c.list)-1].def {
			return errors.New("--entity-name must follow an --entity-type")
		}
		c.list[len(c.list)-1].name = &s
		return nil
	})
	addBool("entity-default", "Default entity name for clients/users/brokers/ips (applies to corresponding entity type)", func() error {
		if len(c.list) == 0 || c.list[len(c.list)-1].name != nil || c.list[len(c.list)-1].def {
			return errors.New("--entity-default must follow an --entity-type")
		}
		c.list[len(c.list)-1].def = true
		return nil
	})
	for _, short := range []struct{ flag, typ, usage string }{
		{"topic", "topics", "The topic's name."},
		{"broker", "brokers", "The broker's ID."},
		{"user", "users", "The user's principal name."},
		{"client", "clients", "The client's ID."},
		{"ip", "ips", "The IP address."},
	} {
		add(short.flag, "String: "+short.flag, short.usage, func(s string) error {
			c.list = append(c.list, configEntity{typ: short.typ, name: &s})
			return nil
		})
	}
	for _, short := range []struct{ flag, typ, usage string }{
		{"broker-defaults", "brokers", "The config defaults for all brokers."},
		{"user-defaults", "users", "The config defaults for all users."},
		{"client-defaults", "clients", "The config defaults for all clients."},
		{"ip-defaults", "ips", "The config defaults for all IPs."},
	} {
		addBool(short.flag, short.usage, func() error {
			c.list = append(c.list, configEntity{typ: short.typ, def: true})
			return nil
		})
	}
}

// kafkaConfigs is kafka-configs.sh: describe and change topic, broker
// (KIP-226 dynamic per-broker and cluster-default) and client quota
// configs, and SCRAM credentials.
func kafkaConfigs(args []string) error {
	t := newKafkaTool("kafka-configs.sh", "This tool helps to manipulate and describe entity config for a topic, client, user, broker or ip.", "command-config", true)
	var ents configEntities
	var describe, alter, all, force bool
	var addConfig, deleteConfig, addConfigFile string
	t.flag(&describe, "describe", "List configs for the given entity.")
	t.flag(&alter, "alter", "Alter the configuration for the entity.")
	t.flag(&all, "all", "List all configs for the given topic, broker, or broker-logger entity (includes static configuration when the entity type is brokers)")
	t.flag(&force, "force", "Suppress console prompts")
	t.str(&addConfig, "add-config", "String", "Key Value pairs of configs to add. Square brackets can be used to group values which contain commas: 'k1=v1,k2=[v1,v2,v2],k3=v3'.")
	t.str(&addConfigFile, "add-config-file", "String", "Path to a properties file with configs to add.")
	t.str(&deleteConfig, "delete-config", "String", "config keys to remove 'k1,k2'")
	ents.register(t)
	if err := t.parse(args); err != nil {
		return err
	}
	if describe == alter {
		return t.usage("Command must include exactly one action: --describe, --alter")
	}
	if len(ents.list) == 0 {
		return t.usage("At least one entity type must be specified")
	}
	set, err := parseAddConfig(addConfig)
	if err != nil {
		return t.usage("%v", err)
	}
	if addConfigFile != "" {
		fromFile, err := loadClientProperties(addConfigFile)
		if err != nil {
			return err
		}
		for k, v := range fromFile {
			set[k] = v
		}
	}
	var del []string
	if deleteConfig != "" {
		del = splitQuotaList(stringList{deleteConfig})
	}
	if alter && len(set) == 0 && len(del) == 0 {
		return t.usage("At least one of --add-config, --add-config-file, or --delete-config must be specified with --alter")
	}
	e := ents.list[0]
	if t.zookeeper != "" && e.typ == "users" && len(ents.list) == 1 && e.name != nil && onlySCRAM(set, del, describe) {
		// As Kafka 3.9 still allows: SCRAM credentials written to
		// ZooKeeper directly, so brokers can start with them.
		return scramInZooKeeper(t.zookeeper, *e.name, set, del, describe)
	}
	bootstrap, err := t.connect()
	if err != nil {
		return err
	}
	return withAdmin(bootstrap, func(ctx context.Context, adm *kadm.Client) error {
		switch e.typ {
		case "topics", "brokers":
			if len(ents.list) > 1 {
				return errors.New("only one topic or broker entity at a time")
			}
			if describe {
				return describeResourceConfigs(ctx, adm, e, all)
			}
			return alterResourceConfigs(ctx, adm, e, set, del)
		case "users", "clients", "ips":
			if describe {
				return describeQuotaConfigs(ctx, adm, ents.list)
			}
			return alterQuotaConfigs(ctx, adm, ents.list, set, del)
		}
		return fmt.Errorf("entity type %s: ferry has no runtime loggers to configure", e.typ)
	})
}

// parseAddConfig reads 'k1=v1,k2=[a,b],k3=v3'.
func parseAddConfig(s string) (map[string]string, error) {
	out := map[string]string{}
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return nil, fmt.Errorf("Invalid entity config: all configs to be added must be in the format \"key=val\" (at %q)", s)
		}
		key, rest := strings.TrimSpace(s[:eq]), s[eq+1:]
		var val string
		if strings.HasPrefix(rest, "[") {
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, fmt.Errorf("config %s: unclosed [", key)
			}
			val, rest = rest[1:end], rest[end+1:]
		} else {
			end := strings.IndexByte(rest, ',')
			if end < 0 {
				end = len(rest)
			}
			val, rest = rest[:end], rest[end:]
		}
		out[key] = strings.TrimSpace(val)
		s = strings.TrimPrefix(rest, ",")
	}
	return out, nil
}

// configResource names a topic or broker entity as the config APIs do:
// a broker's id, or "" for the cluster-wide default.
func configResource(e configEntity) (kmsg.ConfigResourceType, string, string, error) {
	if e.typ == "topics" {
		if e.name == nil {
			return 0, "", "", errors.New("--entity-name (the topic) is needed")
		}
		return kmsg.ConfigResourceTypeTopic, *e.name, "topic " + *e.name, nil
	}
	if e.def || e.name == nil {
		return kmsg.ConfigResourceTypeBroker, "", "brokers in the cluster", nil
	}
	if _, err := strconv.ParseInt(*e.name, 10, 32); err != nil {
		return 0, "", "", fmt.Errorf("The entity name for brokers must be a valid integer broker id, but it is: %s", *e.name)
	}
	return kmsg.ConfigResourceTypeBroker, *e.name, "broker " + *e.name, nil
}

func describeResourceConfigs(ctx context.Context, adm *kadm.Client, e configEntity, all bool) error {
	if e.typ == "topics" && e.name == nil {
		// No topic named: every topic, as Kafka's tool does.
		names, err := matchTopics(ctx, adm, "", false)
		if err != nil {
			return err
		}
		for _, n := range names {
			if err := describeResourceConfigs(ctx, adm, configEntity{typ: "topics", name: &n}, all); err != nil {
				return err
			}
		}
		return nil
	}
	typ, name, what, err := configResource(e)
	if err != nil {
		return err
	}
	if typ == kmsg.ConfigResourceTypeBroker && e.name == nil && !e.def {
		// No broker named: every broker, then the cluster default.
		md, err := adm.BrokerMetadata(ctx)
		if err != nil {
			return err
		}
		for _, b := range md.Brokers {
			id := strconv.Itoa(int(b.NodeID))
			if err := describeResourceConfigs(ctx, adm, configEntity{typ: "brokers", name: &id}, all); err != nil {
				return err
			}
		}
		return describeResourceConfigs(ctx, adm, configEntity{typ: "brokers", def: true}, all)
	}
	var rcs kadm.ResourceConfigs
	if typ == kmsg.ConfigResourceTypeTopic {
		rcs, err = adm.DescribeTopicConfigs(ctx, name)
	} else {
		id, _ := strconv.Atoi(name)
		if name == "" {
			rcs, err = adm.DescribeBrokerConfigs(ctx)
		} else {
			rcs, err = adm.DescribeBrokerConfigs(ctx, int32(id))
		}
	}
	if err != nil {
		return err
	}
	rc, err := rcs.On(name, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		return &kafkaError{msg: fmt.Sprintf("Error while describing configs of %s: %v", what, err)}
	}
	header := "Dynamic configs for " + what + " are:"
	wanted := map[kmsg.ConfigSource]bool{kmsg.ConfigSourceDynamicTopicConfig: typ == kmsg.ConfigResourceTypeTopic,
		kmsg.ConfigSourceDynamicBrokerConfig:        name != "" && typ == kmsg.ConfigResourceTypeBroker,
		kmsg.ConfigSourceDynamicDefaultBrokerConfig: name == "" && typ == kmsg.ConfigResourceTypeBroker}
	switch {
	case all:
		header = "All configs for " + what + " are:"
	case name == "" && typ == kmsg.ConfigResourceTypeBroker:
		header = "Default configs for brokers in the cluster are:"
	}
	fmt.Println(header)
	configs := rc.Configs
	sort.Slice(configs, func(i, j int) bool { return configs[i].Key < configs[j].Key })
	for _, c := range configs {
		if !all && !wanted[c.Source] {
			continue
		}
		fmt.Printf("  %s=%s sensitive=%t synonyms={%s}\n", c.Key, configValue(c.Value, c.Sensitive), c.Sensitive, synonyms(c))
	}
	return nil
}

func configValue(v *string, sensitive bool) string {
	if v == nil || sensitive {
		return "null"
	}
	return *v
}

func synonyms(c kadm.Config) string {
	var s []string
	for _, syn := range c.Synonyms {
		s = append(s, fmt.Sprintf("%s:%s=%s", syn.Source, syn.Key, configValue(syn.Value, c.Sensitive)))
	}
	return strings.Join(s, ", ")
}

func alterResourceConfigs(ctx context.Context, adm *kadm.Client, e configEntity, set map[string]string, del []string) error {
	typ, name, what, err := configResource(e)
	if err != nil {
		return err
	}
	var alters []kadm.AlterConfig
	for k, v := range set {
		alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
	}
	for _, k := range del {
		alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	var resps kadm.AlterConfigsResponses
	if typ == kmsg.ConfigResourceTypeTopic {
		resps, err = adm.AlterTopicConfigs(ctx, alters, name)
	} else if name == "" {
		resps, err = adm.AlterBrokerConfigs(ctx, alters)
	} else {
		id, _ := strconv.Atoi(name)
		resps, err = adm.AlterBrokerConfigs(ctx, alters, int32(id))
	}
	if err != nil {
		return err
	}
	for _, r := range resps {
		if r.Err != nil {
			msg := r.ErrMessage
			if msg == "" {
				msg = r.Err.Error()
			}
			return &kafkaError{msg: fmt.Sprintf("Error while executing config command with args '%s': %s", what, msg)}
		}
	}
	if typ == kmsg.ConfigResourceTypeBroker && name == "" {
		fmt.Println("Completed updating default config for brokers in the cluster.")
	} else {
		fmt.Printf("Completed updating config for %s.\n", what)
	}
	return nil
}

// quotaEntity turns the entity options into a client quota entity.
func quotaEntity(list []configEntity) (kadm.ClientQuotaEntity, error) {
	var e kadm.ClientQuotaEntity
	for _, c := range list {
		t := map[string]string{"users": "user", "clients": "client-id", "ips": "ip"}[c.typ]
		if t == "" {
			return nil, fmt.Errorf("entity type %s cannot be combined with users, clients or ips", c.typ)
		}
		e = append(e, kadm.ClientQuotaEntityComponent{Type: t, Name: c.name})
	}
	return e, nil
}

func alterQuotaConfigs(ctx context.Context, adm *kadm.Client, list []configEntity, set map[string]string, del []string) error {
	scram, quotas := map[string]string{}, map[string]string{}
	for k, v := range set {
		if strings.HasPrefix(k, "SCRAM-") {
			scram[k] = v
		} else {
			quotas[k] = v
		}
	}
	if len(scram) > 0 || slicesHasPrefix(del, "SCRAM-") {
		if err := alterSCRAM(ctx, adm, list, scram, del); err != nil {
			return err
		}
	}
	e, err := quotaEntity(list)
	if err != nil {
		return err
	}
	var ops []kadm.AlterClientQuotaOp
	for k, v := range quotas {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("Cannot parse quota configuration value for %s: %s", k, v)
		}
		ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Value: f})
	}
	for _, k := range del {
		if !strings.HasPrefix(k, "SCRAM-") {
			ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Remove: true})
		}
	}
	if len(ops) > 0 {
		res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: e, Ops: ops}})
		if err != nil {
			return err
		}
		for _, r := range res {
			if r.Err != nil {
				return fmt.Errorf("%s: %w: %s", describeEntity(r.Entity), r.Err, r.ErrMessage)
			}
		}
	}
	fmt.Printf("Completed updating config for %s.\n", entityWords(list))
	return nil
}

func slicesHasPrefix(l []string, prefix string) bool {
	for _, s := range l {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// entityWords names entities as kafka-configs.sh's messages do:
// "user alice", "default user", "user alice, client-id c".
func entityWords(list []configEntity) string {
	var parts []string
	for _, c := range list {
		singular := strings.TrimSuffix(c.typ, "s")
		if c.name == nil {
			parts = append(parts, "default "+singular)
		} else {
			parts = append(parts, singular+" "+*c.name)
		}
	}
	return strings.Join(parts, ", ")
}

// alterSCRAM upserts 'SCRAM-SHA-256=[iterations=8192,password=p]' and
// deletes SCRAM-SHA-256 for one user.
func alterSCRAM(ctx context.Context, adm *kadm.Client, list []configEntity, set map[string]string, del []string) error {
	if len(list) != 1 || list[0].typ != "users" || list[0].name == nil {
		return errors.New("SCRAM credentials are set for one named user (--entity-type users --entity-name U)")
	}
	user := *list[0].name
	var upserts []kadm.UpsertSCRAM
	for mech, v := range set {
		m, err := scramMechanism(mech)
		if err != nil {
			return err
		}
		password, iterations, err := scramSetting(mech, v)
		if err != nil {
			return err
		}
		upserts = append(upserts, kadm.UpsertSCRAM{User: user, Mechanism: m, Iterations: int32(iterations), Password: password})
	}
	var dels []kadm.DeleteSCRAM
	for _, k := range del {
		if strings.HasPrefix(k, "SCRAM-") {
			m, err := scramMechanism(k)
			if err != nil {
				return err
			}
			dels = append(dels, kadm.DeleteSCRAM{User: user, Mechanism: m})
		}
	}
	res, err := adm.AlterUserSCRAMs(ctx, dels, upserts)
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Err != nil {
			return fmt.Errorf("user %s: %w: %s", r.User, r.Err, r.ErrMessage)
		}
	}
	return nil
}

func scramMechanism(s string) (kadm.ScramMechanism, error) {
	switch s {
	case "SCRAM-SHA-256":
		return kadm.ScramSha256, nil
	case "SCRAM-SHA-512":
		return kadm.ScramSha512, nil
	}
	return 0, fmt.Errorf("%s: want SCRAM-SHA-256 or SCRAM-SHA-512", s)
}

func describeQuotaConfigs(ctx context.Context, adm *kadm.Client, list []configEntity) error {
	var filter []kadm.DescribeClientQuotaComponent
	for _, c := range list {
		t := map[string]string{"users": "user", "clients": "client-id", "ips": "ip"}[c.typ]
		fc := kadm.DescribeClientQuotaComponent{Type: t, MatchType: kmsg.QuotasMatchTypeAny}
		switch {
		case c.name != nil:
			fc.MatchType, fc.MatchName = kmsg.QuotasMatchTypeExact, c.name
		case c.def:
			fc.MatchType = kmsg.QuotasMatchTypeDefault
		}
		filter = append(filter, fc)
	}
	described, err := adm.DescribeClientQuotas(ctx, true, filter)
	if err != nil {
		return err
	}
	for _, d := range described {
		var vals []string
		for _, v := range d.Values {
			vals = append(vals, v.Key+"="+strconv.FormatFloat(v.Value, 'f', 1, 64))
		}
		sort.Strings(vals)
		fmt.Printf("Quota configs for %s are %s\n", describeEntity(d.Entity), strings.Join(vals, ", "))
	}
	if len(list) == 1 && list[0].typ == "users" && list[0].name != nil {
		users, err := adm.DescribeUserSCRAMs(ctx, *list[0].name)
		if err == nil {
			for _, u := range users {
				if u.Err != nil || len(u.CredInfos) == 0 {
					continue
				}
				var creds []string
				for _, c := range u.CredInfos {
					creds = append(creds, fmt.Sprintf("%s=iterations=%d", c.Mechanism, c.Iterations))
				}
				fmt.Printf("SCRAM credential configs for user-principal '%s' are %s\n", u.User, strings.Join(creds, ", "))
			}
		}
	}
	if len(described) == 0 {
		fmt.Fprintln(os.Stderr, "No quota configs found.")
	}
	return nil
}

// onlySCRAM reports a change (or a describe) of SCRAM credentials alone.
func onlySCRAM(set map[string]string, del []string, describe bool) bool {
	if describe {
		return true
	}
	for k := range set {
		if !strings.HasPrefix(k, "SCRAM-") {
			return false
		}
	}
	for _, k := range del {
		if !strings.HasPrefix(k, "SCRAM-") {
			return false
		}
	}
	return true
}

// scramInZooKeeper changes or describes a user's SCRAM credentials in the
// cluster's ZooKeeper, where every broker reads them.
func scramInZooKeeper(connect, user string, set map[string]string, del []string, describe bool) error {
	store, closeStore, err := (&userStoreFlags{zookeeper: connect}).offline(!describe)
	if err != nil {
		return err
	}
	defer closeStore()
	if describe {
		creds, err := storedCredentials(store, []string{user})
		if err != nil {
			return err
		}
		var parts []string
		for _, c := range creds {
			parts = append(parts, fmt.Sprintf("%s=iterations=%d", c.Mechanism, c.Iterations))
		}
		fmt.Printf("Configs for user-principal '%s' are %s\n", user, strings.Join(parts, ","))
		return nil
	}
	for mech, v := range set {
		m, err := auth.ParseScramMechanism(mech)
		if err != nil {
			return err
		}
		password, iterations, err := scramSetting(mech, v)
		if err != nil {
			return err
		}
		cred, err := auth.NewScramCredential(m, password, iterations)
		if err != nil {
			return err
		}
		if err := store.Upsert(user, cred); err != nil {
			return err
		}
	}
	for _, k := range del {
		m, err := auth.ParseScramMechanism(k)
		if err != nil {
			return err
		}
		if err := store.Delete(user, m); err != nil {
			return err
		}
	}
	fmt.Printf("Completed updating config for user %s.\n", user)
	return nil
}

// scramSetting reads "iterations=8192,password=p" (iterations default
// 4096, Kafka's).
func scramSetting(mech, v string) (password string, iterations int, err error) {
	iterations = 4096
	for _, kv := range strings.Split(v, ",") {
		k, val, _ := strings.Cut(kv, "=")
		switch strings.TrimSpace(k) {
		case "password":
			password = val
		case "iterations":
			if iterations, err = strconv.Atoi(val); err != nil {
				return "", 0, fmt.Errorf("%s iterations %q: want a number", mech, val)
			}
		default:
			return "", 0, fmt.Errorf("%s: unknown setting %q (want iterations, password)", mech, k)
		}
	}
	if password == "" {
		return "", 0, fmt.Errorf("%s: a password is needed", mech)
	}
	return password, iterations, nil
}
