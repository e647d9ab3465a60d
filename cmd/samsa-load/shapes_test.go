package main

import (
	"errors"
	"strings"
	"testing"
)

// TestRunShapesRejectsUnknownShape: a misspelt -shapes fails before any
// broker is dialed, naming the shapes there are.
func TestRunShapesRejectsUnknownShape(t *testing.T) {
	err := runShapes(shapeOptions{brokers: "127.0.0.1:1", shapes: []string{"metadata", "joins"}})
	if !errors.Is(err, errShapes) || !strings.Contains(err.Error(), `"joins"`) || !strings.Contains(err.Error(), "parts-idle") {
		t.Fatalf("err %v", err)
	}
}
