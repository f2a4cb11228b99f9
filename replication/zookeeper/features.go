package zookeeper

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/go-zookeeper/zk"
)

// /feature holds the cluster's finalized feature levels (KIP-584), as
// Kafka's FeatureZNode writes them, version 2 (KIP-778: a finalized
// feature has a level, no range):
//
//	{"version":2,"status":1,"features":{"transaction.version":{"max_version_level":2}}}
//
// Version 1's "min_version_level" is read and ignored. The znode's data
// version is the features' epoch (ApiVersions' FinalizedFeaturesEpoch).
// Status 0 (disabled) reads as no finalized feature, as Kafka's does.
const featurePath = "/feature"

// ErrFeaturesChanged: /feature was written (or created) since it was
// read; read it again and decide again.
var ErrFeaturesChanged = errors.New("zookeeper: /feature changed since it was read")

// FinalizedFeatures is /feature: each finalized feature's level, and the
// znode's data version as the epoch (-1 when the znode is absent).
type FinalizedFeatures struct {
	Levels map[string]int16
	Epoch  int64
}

type featureLevelJSON struct {
	MinVersionLevel *int `json:"min_version_level,omitempty"`
	MaxVersionLevel *int `json:"max_version_level"`
}

type featureZNode struct {
	Version  int                         `json:"version"`
	Status   int                         `json:"status"`
	Features map[string]featureLevelJSON `json:"features"`
}

// featureEnabled is FeatureZNodeStatus.Enabled.
const featureEnabled = 1

func encodeFeatures(levels map[string]int16) []byte {
	z := featureZNode{Version: 2, Status: featureEnabled, Features: map[string]featureLevelJSON{}}
	names := make([]string, 0, len(levels))
	for n := range levels {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		l := int(levels[n])
		z.Features[n] = featureLevelJSON{MaxVersionLevel: &l}
	}
	data, _ := json.Marshal(z)
	return data
}

func decodeFeatures(data []byte, version int32) (FinalizedFeatures, error) {
	var z featureZNode
	if err := decodeJSON(featurePath, data, &z); err != nil {
		return FinalizedFeatures{}, err
	}
	if z.Version < 1 || z.Version > 2 {
		return FinalizedFeatures{}, fmt.Errorf("%w: %s: version %d", ErrCorrupt, featurePath, z.Version)
	}
	f := FinalizedFeatures{Levels: map[string]int16{}, Epoch: int64(version)}
	if z.Status != featureEnabled {
		return f, nil
	}
	for name, l := range z.Features {
		if name == "" || l.MaxVersionLevel == nil || *l.MaxVersionLevel < 0 || *l.MaxVersionLevel > math.MaxInt16 {
			return FinalizedFeatures{}, fmt.Errorf("%w: %s: feature %q", ErrCorrupt, featurePath, truncate(name))
		}
		if *l.MaxVersionLevel > 0 {
			f.Levels[name] = int16(*l.MaxVersionLevel)
		}
	}
	return f, nil
}

// Features reads /feature (Epoch -1 and no levels when it is absent).
func (c *Client) Features() (FinalizedFeatures, error) {
	data, version, err := c.get(featurePath)
	if errors.Is(err, ErrNotFound) {
		return FinalizedFeatures{Levels: map[string]int16{}, Epoch: -1}, nil
	}
	if err != nil {
		return FinalizedFeatures{}, err
	}
	return decodeFeatures(data, version)
}

// SetFeatures writes levels (a level of 0 or less removes the feature)
// if /feature is still at epoch: created when epoch is -1, replaced
// when it is that data version; ErrFeaturesChanged otherwise. It returns
// what was written with its new epoch.
func (c *Client) SetFeatures(levels map[string]int16, epoch int64) (FinalizedFeatures, error) {
	kept := map[string]int16{}
	for n, l := range levels {
		if l > 0 {
			kept[n] = l
		}
	}
	data := encodeFeatures(kept)
	var written int32
	err := c.do(func(bool) error {
		if epoch < 0 {
			_, err := c.conn.Create(c.abs(featurePath), data, 0, openACL)
			return err
		}
		st, err := c.conn.Set(c.abs(featurePath), data, int32(epoch))
		if err == nil {
			written = st.Version
		}
		return err
	})
	switch {
	case err == nil:
		return FinalizedFeatures{Levels: kept, Epoch: int64(written)}, nil
	case errors.Is(err, zk.ErrNodeExists), errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNoNode):
		return FinalizedFeatures{}, ErrFeaturesChanged
	}
	return FinalizedFeatures{}, fmt.Errorf("zookeeper: write %s: %w", featurePath, err)
}

// WatchFeatures delivers /feature now and after every change (Epoch -1
// while it is absent).
func (c *Client) WatchFeatures() *Watch[FinalizedFeatures] {
	return startWatch(c, featurePath, func() (FinalizedFeatures, <-chan zk.Event, error) {
		data, version, present, fired, err := c.watchData(featurePath)
		if err != nil {
			return FinalizedFeatures{}, nil, err
		}
		if !present {
			return FinalizedFeatures{Levels: map[string]int16{}, Epoch: -1}, fired, nil
		}
		f, err := decodeFeatures(data, version)
		if err != nil {
			c.log.Warn("unreadable /feature; keeping the last one read", "err", err)
			return FinalizedFeatures{}, nil, err
		}
		return f, fired, nil
	})
}
