package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/ferry-mq/ferry/server"
)

func (g *Gateway) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, typeJSON, map[string]string{"status": "ok"})
}

func (g *Gateway) listTopics(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, typeJSON, g.broker.Topics())
}

type createTopicBody struct {
	Name              string            `json:"name"`
	Partitions        int32             `json:"partitions"`
	ReplicationFactor int16             `json:"replication_factor"`
	Configs           map[string]string `json:"configs"`
}

func (g *Gateway) createTopic(w http.ResponseWriter, r *http.Request) {
	var body createTopicBody
	if !decodeBody(w, r, &body) {
		return
	}
	err := g.broker.CreateTopic(server.TopicSpec{
		Name: body.Name, Partitions: body.Partitions,
		ReplicationFactor: body.ReplicationFactor, Configs: body.Configs,
	})
	if err != nil {
		writeCoreError(w, err)
		return
	}
	g.writeTopic(w, http.StatusCreated, body.Name)
}

func (g *Gateway) describeTopic(w http.ResponseWriter, r *http.Request) {
	g.writeTopic(w, http.StatusOK, chi.URLParam(r, "topic"))
}

func (g *Gateway) writeTopic(w http.ResponseWriter, status int, name string) {
	info, err := g.broker.DescribeTopic(name)
	if err != nil {
		writeCoreError(w, err)
		return
	}
	writeJSON(w, status, typeJSON, info)
}

func (g *Gateway) deleteTopic(w http.ResponseWriter, r *http.Request) {
	if err := g.broker.DeleteTopic(chi.URLParam(r, "topic")); err != nil {
		writeCoreError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (g *Gateway) createPartitions(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Partitions int32 `json:"partitions"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	name := chi.URLParam(r, "topic")
	if err := g.broker.CreatePartitions(name, body.Partitions); err != nil {
		writeCoreError(w, err)
		return
	}
	g.writeTopic(w, http.StatusOK, name)
}

// alterConfigs serves PUT /topics/{topic}/configs: {"configs": {"k": "v"|number|null}};
// null removes an override, other keys keep theirs.
func (g *Gateway) alterConfigs(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Configs map[string]json.RawMessage `json:"configs"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	if body.Configs == nil {
		writeError(w, http.StatusBadRequest, codeMalformed, `the body needs a "configs" object`)
		return
	}
	set := map[string]string{}
	var remove []string
	for k, raw := range body.Configs {
		v, isNull, err := configValue(raw)
		if err != nil {
			writeError(w, http.StatusBadRequest, codeMalformed, fmt.Sprintf("configs.%s: %v", k, err))
			return
		}
		if isNull {
			remove = append(remove, k)
		} else {
			set[k] = v
		}
	}
	name := chi.URLParam(r, "topic")
	if err := g.broker.AlterTopicConfigs(name, set, remove, false); err != nil {
		writeCoreError(w, err)
		return
	}
	g.writeTopic(w, http.StatusOK, name)
}

// configValue accepts a JSON string, number or boolean as a config value.
func configValue(raw json.RawMessage) (string, bool, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", false, err
	}
	switch t := v.(type) {
	case nil:
		return "", true, nil
	case string:
		return t, false, nil
	case bool:
		return strconv.FormatBool(t), false, nil
	case float64:
		return string(raw), false, nil
	}
	return "", false, errors.New("must be a string, number, boolean or null")
}

// decodeBody reads a JSON body into v, answering 400/413/415 itself.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if f, ok := produceFormat(ct, false); !ok || f != formatJSON {
			writeError(w, http.StatusUnsupportedMediaType, codeUnsupportedType,
				fmt.Sprintf("content type %q is not supported; use %s", ct, typeJSON))
			return false
		}
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeCoreError(w, err)
			return false
		}
		writeError(w, http.StatusBadRequest, codeMalformed, "invalid JSON body: "+err.Error())
		return false
	}
	return true
}

type brokerInfo struct {
	BrokerID int32  `json:"broker_id"`
	Host     string `json:"host"`
	Port     int    `json:"port"`
}

func (g *Gateway) brokers() []brokerInfo {
	host, portText, _ := net.SplitHostPort(g.cfg.AdvertisedKafkaAddr)
	port, _ := strconv.Atoi(portText)
	return []brokerInfo{{BrokerID: g.broker.BrokerID(), Host: host, Port: port}}
}

func (g *Gateway) listBrokers(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, typeJSON, map[string]any{"brokers": g.brokers()})
}

func (g *Gateway) describeCluster(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, typeJSON, map[string]any{
		"cluster_id":    g.broker.ClusterID(),
		"controller_id": g.broker.BrokerID(),
		"brokers":       g.brokers(),
		"topics":        len(g.broker.Topics()),
	})
}
