package api

import (
	"context"
	"errors"
	"testing"

	"github.com/hamba/avro/v2/registry"

	"github.com/ferry-mq/ferry/server"
)

// TestSchemaRegistryThirdPartyClient drives the routes with hamba/avro's
// Confluent Schema Registry client, which parses every answer with its
// own Avro parser, and decodes Avro produced over HTTP with its
// Confluent wire-format decoder.
func TestSchemaRegistryThirdPartyClient(t *testing.T) {
	reg := newTestRegistry(t, nil)
	e := newTestEnv(t, func(_ *server.Config, c *Config) { c.Schemas = reg })
	ctx := context.Background()
	cl, err := registry.NewClient(e.url)
	if err != nil {
		t.Fatal(err)
	}
	id, _, err := cl.CreateSchema(ctx, "orders-value", orderAvro)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cl.GetSchema(ctx, id)
	if err != nil || got.(interface{ FullName() string }).FullName() != "shop.Order" {
		t.Fatalf("GetSchema: %v %v", got, err)
	}
	if subjects, err := cl.GetSubjects(ctx); err != nil || len(subjects) != 1 || subjects[0] != "orders-value" {
		t.Fatalf("GetSubjects: %v %v", subjects, err)
	}
	if versions, err := cl.GetVersions(ctx, "orders-value"); err != nil || len(versions) != 1 {
		t.Fatalf("GetVersions: %v %v", versions, err)
	}
	info, err := cl.GetLatestSchemaInfo(ctx, "orders-value")
	if err != nil || info.ID != id || info.Version != 1 {
		t.Fatalf("GetLatestSchemaInfo: %+v %v", info, err)
	}
	if regID, _, err := cl.IsRegistered(ctx, "orders-value", orderAvro); err != nil || regID != id {
		t.Fatalf("IsRegistered: %d %v", regID, err)
	}
	breaking := `{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"string"}]}`
	if ok, err := cl.IsCompatible(ctx, "orders-value", breaking); err != nil || ok {
		t.Fatalf("IsCompatible(breaking): %v %v", ok, err)
	}
	_, _, err = cl.CreateSchema(ctx, "orders-value", breaking)
	var rerr registry.Error
	if !errors.As(err, &rerr) || rerr.StatusCode != 409 || rerr.Code != 409 {
		t.Fatalf("incompatible CreateSchema: %v", err)
	}
	if err := cl.SetCompatibilityLevel(ctx, "orders-value", "FULL_TRANSITIVE"); err != nil {
		t.Fatal(err)
	}
	// hamba's GetCompatibilityLevel reads {"compatibility"}, but Confluent
	// answers GET /config with {"compatibilityLevel"} (its Config entity),
	// as ferry does; check the level over plain HTTP instead.
	e.do(t, "GET", "/config/orders-value", "", "").wantJSON(t, `{"compatibilityLevel":"FULL_TRANSITIVE"}`)
	_, err = cl.GetSchema(ctx, 9999)
	if !errors.As(err, &rerr) || rerr.StatusCode != 404 || rerr.Code != 40403 {
		t.Fatalf("unknown id: %v", err)
	}

	// Avro produced over HTTP decodes with the client's wire-format decoder.
	addr := startKafka(t, e.broker)
	a := e.do(t, "POST", "/kafka/orders", typeRestAvro, avroBody("", "", id, `{"value":{"id":7,"item":"lamp","note":{"string":"fragile"}}}`))
	if a.status != 200 {
		t.Fatalf("produce: %d %s", a.status, a.body)
	}
	value := consumeOne(t, addr, "orders")
	var order struct {
		ID   int64   `avro:"id"`
		Item string  `avro:"item"`
		Note *string `avro:"note"`
	}
	if err := registry.NewDecoder(cl).Decode(ctx, value, &order); err != nil {
		t.Fatal(err)
	}
	if order.ID != 7 || order.Item != "lamp" || order.Note == nil || *order.Note != "fragile" {
		t.Fatalf("decoded %+v", order)
	}
	if deleted, err := cl.DeleteSubject(ctx, "orders-value"); err != nil || len(deleted) != 1 {
		t.Fatalf("DeleteSubject: %v %v", deleted, err)
	}
}
