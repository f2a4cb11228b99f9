package api

import (
	"github.com/ferry-mq/ferry/server/auth"

	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"

	"github.com/ferry-mq/ferry/server"
)

// healthAnswer is GET /healthz's answer.
type healthAnswer struct {
	Status string `json:"status" example:"ok"`
}

// healthz serves GET /healthz: 200 once the node is serving.
//
//	@Summary	Liveness: 200 while the node serves HTTP
//	@Tags		cluster
//	@Produce	json
//	@Success	200	{object}	healthAnswer
//	@Router		/healthz [get]
func (g *Gateway) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, typeJSON, healthAnswer{Status: "ok"})
}

// listTopics serves GET /topics.
//
//	@Summary	List topic names (on a cluster, every topic of the cluster)
//	@Tags		topics
//	@Produce	json
//	@Success	200	{array}	string
//	@Router		/topics [get]
func (g *Gateway) listTopics(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, typeJSON, g.describable(r, auth.ResourceTopic, g.broker.KnownTopics()))
}

type createTopicBody struct {
	Name string `json:"name" example:"orders"`
	// Partitions absent or -1: the broker's default (num.partitions).
	Partitions *int32 `json:"partitions" example:"3"`
	// ReplicationFactor absent or -1: the broker's default.
	ReplicationFactor *int16            `json:"replication_factor" example:"1"`
	Configs           map[string]string `json:"configs"`
}

// spec checks the counts a client gave: 0 is refused, as Kafka refuses it,
// rather than read as "the default".
func (b createTopicBody) spec() (server.TopicSpec, error) {
	spec := server.TopicSpec{Name: b.Name, Configs: b.Configs}
	if b.Partitions != nil {
		if *b.Partitions == 0 {
			return spec, fmt.Errorf("%w: 0; it must be at least 1 (or -1 for the default)", server.ErrInvalidPartitions)
		}
		spec.Partitions = *b.Partitions
	}
	if b.ReplicationFactor != nil {
		if *b.ReplicationFactor == 0 {
			return spec, fmt.Errorf("%w: 0; it must be at least 1 (or -1 for the default)", server.ErrInvalidReplicas)
		}
		spec.ReplicationFactor = *b.ReplicationFactor
	}
	return spec, nil
}

// createTopic serves POST /topics.
//
//	@Summary		Create a topic
//	@Description	Partitions and replication_factor absent (or -1) take the broker's defaults, 0 is refused (422); configs are topic-level overrides (retention.ms, cleanup.policy, …).
//	@Tags			topics
//	@Accept			json
//	@Produce		json
//	@Param			body	body		createTopicBody	true	"the topic"
//	@Success		201		{object}	server.TopicInfo
//	@Failure		400		{object}	errorBody	"40001: the body is not JSON of this shape"
//	@Failure		409		{object}	errorBody	"40901: the topic exists"
//	@Failure		413		{object}	errorBody	"41301: the body is over the request limit"
//	@Failure		415		{object}	errorBody	"41501: the content type is not JSON"
//	@Failure		422		{object}	errorBody	"42201 invalid name, 42202 partitions, 42203 replication factor, 42204 configs"
//	@Failure		500		{object}	errorBody	"50001/50002: internal or storage error"
//	@Failure		503		{object}	errorBody	"50301: the node is shutting down"
//	@Router			/topics [post]
func (g *Gateway) createTopic(w http.ResponseWriter, r *http.Request) {
	var body createTopicBody
	if !decodeBody(w, r, &body) {
		return
	}
	// Kafka's CreateTopics: CREATE on the cluster, or on the topic itself.
	if !g.may(r, auth.OpCreate, auth.Resource{Type: auth.ResourceCluster, Name: auth.ClusterName}) &&
		!g.may(r, auth.OpCreate, auth.Resource{Type: auth.ResourceTopic, Name: body.Name}) {
		g.deny(w, r, fmt.Sprintf("%s may not CREATE TOPIC:%s", auth.PrincipalFrom(r.Context()), body.Name))
		return
	}
	spec, err := body.spec()
	if err == nil {
		err = g.broker.CreateTopic(spec)
	}
	if err != nil {
		writeCoreError(w, err)
		return
	}
	g.writeTopic(w, http.StatusCreated, body.Name)
}

// describeTopic serves GET /topics/{topic}.
//
//	@Summary		Describe a topic: partitions (leader, replicas, ISR, offline replicas, offsets, size) and effective configs
//	@Description	On a cluster: every partition as the controller last described it to this node, except that a partition this node leads shows its own ISR, which the controller learns a few seconds later. Offsets and sizes are this node's replica's: they are present only where "local" is true.
//	@Tags			topics
//	@Produce		json
//	@Param			topic	path		string	true	"topic name"
//	@Success		200		{object}	server.TopicInfo
//	@Failure		404		{object}	errorBody	"40401: no such topic"
//	@Failure		500		{object}	errorBody	"50001/50002: internal or storage error"
//	@Router			/topics/{topic} [get]
func (g *Gateway) describeTopic(w http.ResponseWriter, r *http.Request) {
	g.writeTopic(w, http.StatusOK, pathParam(r, "topic"))
}

func (g *Gateway) writeTopic(w http.ResponseWriter, status int, name string) {
	info, err := g.broker.DescribeTopic(name)
	if err != nil {
		writeCoreError(w, err)
		return
	}
	writeJSON(w, status, typeJSON, info)
}

// deleteTopic serves DELETE /topics/{topic}.
//
//	@Summary	Delete a topic and its data
//	@Tags		topics
//	@Produce	json
//	@Param		topic	path	string	true	"topic name"
//	@Success	204		"deleted"
//	@Failure	404		{object}	errorBody	"40401: no such topic"
//	@Failure	500		{object}	errorBody	"50001/50002: internal or storage error"
//	@Failure	503		{object}	errorBody	"50301: the node is shutting down"
//	@Router		/topics/{topic} [delete]
func (g *Gateway) deleteTopic(w http.ResponseWriter, r *http.Request) {
	if err := g.broker.DeleteTopic(pathParam(r, "topic")); err != nil {
		writeCoreError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// createPartitionsBody is POST /topics/{topic}/partitions's body.
type createPartitionsBody struct {
	// Partitions is the new total count, more than the topic has.
	Partitions int32 `json:"partitions" example:"6"`
}

// createPartitions serves POST /topics/{topic}/partitions.
//
//	@Summary	Add partitions to a topic (the body gives the new total)
//	@Tags		topics
//	@Accept		json
//	@Produce	json
//	@Param		topic	path		string					true	"topic name"
//	@Param		body	body		createPartitionsBody	true	"the new partition count"
//	@Success	200		{object}	server.TopicInfo
//	@Failure	400		{object}	errorBody	"40001: the body is not JSON of this shape"
//	@Failure	404		{object}	errorBody	"40401: no such topic"
//	@Failure	413		{object}	errorBody	"41301: the body is over the request limit"
//	@Failure	415		{object}	errorBody	"41501: the content type is not JSON"
//	@Failure	422		{object}	errorBody	"42202: the count is not more than the topic has"
//	@Failure	500		{object}	errorBody	"50001/50002: internal or storage error"
//	@Failure	503		{object}	errorBody	"50301: the node is shutting down"
//	@Router		/topics/{topic}/partitions [post]
func (g *Gateway) createPartitions(w http.ResponseWriter, r *http.Request) {
	var body createPartitionsBody
	if !decodeBody(w, r, &body) {
		return
	}
	name := pathParam(r, "topic")
	if err := g.broker.CreatePartitions(name, body.Partitions); err != nil {
		writeCoreError(w, err)
		return
	}
	g.writeTopic(w, http.StatusOK, name)
}

// alterConfigsBody is PUT /topics/{topic}/configs's body.
type alterConfigsBody struct {
	// Configs maps a config name to a string, number or boolean value, or
	// to null to remove the override.
	Configs map[string]json.RawMessage `json:"configs"`
}

// alterConfigs serves PUT /topics/{topic}/configs: {"configs": {"k": "v"|number|null}};
// null removes an override, other keys keep theirs.
//
//	@Summary		Set or remove topic config overrides
//	@Description	Each key of configs is set to its value (a string, number or boolean), or its override removed when null; keys not named keep theirs.
//	@Tags			topics
//	@Accept			json
//	@Produce		json
//	@Param			topic	path		string				true	"topic name"
//	@Param			body	body		alterConfigsBody	true	"the overrides"
//	@Success		200		{object}	server.TopicInfo
//	@Failure		400		{object}	errorBody	"40001: the body is not JSON of this shape, or a value is not a string, number, boolean or null"
//	@Failure		404		{object}	errorBody	"40401: no such topic"
//	@Failure		413		{object}	errorBody	"41301: the body is over the request limit"
//	@Failure		415		{object}	errorBody	"41501: the content type is not JSON"
//	@Failure		422		{object}	errorBody	"42204: an unknown config or an invalid value"
//	@Failure		500		{object}	errorBody	"50001/50002: internal or storage error"
//	@Failure		503		{object}	errorBody	"50301: the node is shutting down"
//	@Router			/topics/{topic}/configs [put]
func (g *Gateway) alterConfigs(w http.ResponseWriter, r *http.Request) {
	var body alterConfigsBody
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
	name := pathParam(r, "topic")
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
	Rack     string `json:"rack,omitempty"`
	// Controller: this broker is the cluster's controller (a single node
	// is its own).
	Controller bool `json:"controller"`
}

// brokersAnswer is GET /brokers's answer.
type brokersAnswer struct {
	Brokers []brokerInfo `json:"brokers"`
}

// clusterAnswer is GET /cluster's answer (fields in the order a map
// would encode them, as before this type existed).
type clusterAnswer struct {
	BrokerCount int          `json:"broker_count"`
	Brokers     []brokerInfo `json:"brokers"`
	ClusterID   string       `json:"cluster_id"`
	// ControllerID is -1 while a cluster's broker has not heard from the
	// controller yet.
	ControllerID int32 `json:"controller_id"`
	// OfflinePartitions have no leader, or a failed log on this node.
	OfflinePartitions int `json:"offline_partitions"`
	// Partitions counts the cluster's partitions.
	Partitions int `json:"partitions"`
	// Topics is how many topics exist.
	Topics int `json:"topics"`
	// UnderReplicatedPartitions have an ISR smaller than their replicas.
	UnderReplicatedPartitions int `json:"under_replicated_partitions"`
}

// brokers are the live brokers: on a cluster as the controller last
// described them, on a single node this one at its advertised address.
func (g *Gateway) brokers(st server.ClusterState) []brokerInfo {
	if st.Brokers == nil {
		host, portText, _ := net.SplitHostPort(g.cfg.AdvertisedKafkaAddr)
		port, _ := strconv.Atoi(portText)
		id := g.broker.BrokerID()
		return []brokerInfo{{BrokerID: id, Host: host, Port: port, Controller: st.ControllerID == id}}
	}
	out := make([]brokerInfo, 0, len(st.Brokers))
	for _, b := range st.Brokers {
		out = append(out, brokerInfo{BrokerID: b.ID, Host: b.Host, Port: int(b.Port), Rack: b.Rack, Controller: b.ID == st.ControllerID})
	}
	return out
}

// listBrokers serves GET /brokers.
//
//	@Summary		List the live brokers, their Kafka listener addresses and racks, and which is the controller
//	@Description	On a cluster: the live brokers as the controller last described them to this node (UpdateMetadata); on a single node, this node.
//	@Tags			cluster
//	@Produce		json
//	@Success		200	{object}	brokersAnswer
//	@Router			/brokers [get]
func (g *Gateway) listBrokers(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, typeJSON, brokersAnswer{Brokers: g.brokers(g.broker.ClusterState())})
}

// describeCluster serves GET /cluster.
//
//	@Summary		Describe the cluster: id, controller, brokers, topic and partition counts, under-replicated and offline partitions
//	@Description	On a cluster the counts cover every partition of the cluster, from the controller's description (a partition led here, from this node's own newer ISR).
//	@Tags			cluster
//	@Produce		json
//	@Success		200	{object}	clusterAnswer
//	@Router			/cluster [get]
func (g *Gateway) describeCluster(w http.ResponseWriter, r *http.Request) {
	st := g.broker.ClusterState()
	brokers := g.brokers(st)
	writeJSON(w, http.StatusOK, typeJSON, clusterAnswer{
		BrokerCount:               len(brokers),
		Brokers:                   brokers,
		ClusterID:                 g.broker.ClusterID(),
		ControllerID:              st.ControllerID,
		OfflinePartitions:         st.Offline,
		Partitions:                st.Partitions,
		Topics:                    len(g.broker.KnownTopics()),
		UnderReplicatedPartitions: st.UnderReplicated,
	})
}
