package schemaregistry

import (
	"context"
	"errors"
	"fmt"
)

// Error is a registry error carrying Confluent Schema Registry's
// error_code; Status gives the HTTP status that goes with it.
type Error struct {
	Code    int
	Message string
}

func (e *Error) Error() string { return e.Message }

// Is matches a sentinel (an *Error without a message) by code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Code == e.Code
}

// Status is the HTTP status: the first three digits of a five-digit code.
func (e *Error) Status() int {
	if e.Code >= 10000 {
		return e.Code / 100
	}
	return e.Code
}

// Confluent's error codes, as sentinels for errors.Is.
var (
	ErrSubjectNotFound       = &Error{Code: 40401}
	ErrVersionNotFound       = &Error{Code: 40402}
	ErrSchemaNotFound        = &Error{Code: 40403}
	ErrSubjectSoftDeleted    = &Error{Code: 40404}
	ErrSubjectNotSoftDeleted = &Error{Code: 40405}
	ErrVersionSoftDeleted    = &Error{Code: 40406}
	ErrVersionNotSoftDeleted = &Error{Code: 40407}
	ErrSubjectConfigNotFound = &Error{Code: 40408}
	ErrSubjectModeNotFound   = &Error{Code: 40409}
	ErrIncompatible          = &Error{Code: 409}
	ErrInvalidSchema         = &Error{Code: 42201}
	ErrInvalidVersion        = &Error{Code: 42202}
	ErrInvalidCompatibility  = &Error{Code: 42203}
	ErrInvalidMode           = &Error{Code: 42204}
	ErrOperationNotPermitted = &Error{Code: 42205}
	ErrReferenceExists       = &Error{Code: 42206}
	ErrStore                 = &Error{Code: 50001}
	ErrStoreTimeout          = &Error{Code: 50002}
	ErrStoreUnavailable      = &Error{Code: 50003}
)

func errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func subjectNotFound(s string) *Error { return errorf(40401, "Subject '%s' not found.", s) }

func versionNotFound(v int) *Error { return errorf(40402, "Version %d not found.", v) }

// storeError wraps a store failure: 50002 for a timeout, 50003 when the
// store is closed or unreachable, 50001 otherwise.
func storeError(op string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return errorf(50002, "%s: operation timed out: %v", op, err)
	case errors.Is(err, errStoreClosed), isUnavailable(err):
		return errorf(50003, "%s: schema store unavailable: %v", op, err)
	}
	return errorf(50001, "%s: error in the schema store: %v", op, err)
}

var errStoreClosed = errors.New("schema store is closed")

// unavailableChecks lets a store mark its connection errors as 50003.
var unavailableChecks []func(error) bool

func isUnavailable(err error) bool {
	for _, f := range unavailableChecks {
		if f(err) {
			return true
		}
	}
	return false
}
