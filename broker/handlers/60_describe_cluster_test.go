package handlers

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
)

func TestDescribeCluster(t *testing.T) {
	e := newAdminEnv(t)
	rack := "r2"
	if err := e.d.Controller.RegisterBroker(controller.Broker{ID: 2, Host: "h2", Port: 9093, Rack: &rack}); err != nil {
		t.Fatal(err)
	}
	if err := e.d.Controller.RegisterBroker(controller.Broker{ID: 3, Host: "h3", Port: 9094}); err != nil {
		t.Fatal(err)
	}
	if err := e.d.Controller.FenceBroker(3, true); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		v        int16
		authOps  bool
		endpoint int8
		code     int16
		wantOps  int32
	}{
		{0, false, 1, 0, -2147483648},
		{0, true, 1, 0, clusterAuthorizedOperations()},
		{1, false, 1, 0, -2147483648},
		{1, false, 2, kerr.MismatchedEndpointType.Code, -2147483648},
		{1, false, 7, kerr.UnsupportedEndpointType.Code, -2147483648},
	} {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.IncludeClusterAuthorizedOperations = tc.authOps
		req.EndpointType = tc.endpoint
		resp := e.call(t, req, tc.v).(*kmsg.DescribeClusterResponse)
		if resp.ErrorCode != tc.code || (tc.code != 0) != (resp.ErrorMessage != nil) {
			t.Errorf("v%d endpoint %d: code %d %q, want %d", tc.v, tc.endpoint, resp.ErrorCode, deref(resp.ErrorMessage), tc.code)
		}
		if tc.code != 0 {
			continue
		}
		if resp.ClusterID != "admin-test-cluster" || resp.ControllerID != 1 || resp.ClusterAuthorizedOperations != tc.wantOps {
			t.Errorf("v%d: cluster %q controller %d ops %d", tc.v, resp.ClusterID, resp.ControllerID, resp.ClusterAuthorizedOperations)
		}
		if tc.v >= 1 && resp.EndpointType != 1 {
			t.Errorf("v%d: endpoint type %d", tc.v, resp.EndpointType)
		}
		if len(resp.Brokers) != 2 || resp.Brokers[0].NodeID != 1 || resp.Brokers[1].NodeID != 2 ||
			resp.Brokers[1].Host != "h2" || resp.Brokers[1].Port != 9093 || deref(resp.Brokers[1].Rack) != "r2" ||
			resp.Brokers[0].IsFenced || resp.Brokers[1].IsFenced {
			t.Errorf("v%d: brokers %+v", tc.v, resp.Brokers)
		}
	}

	// v2 (KIP-1073): include_fenced_brokers lists broker 3 too, marked
	// fenced; without it v2 lists the unfenced ones only.
	for _, include := range []bool{false, true} {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.IncludeFencedBrokers = include
		resp := e.call(t, req, 2).(*kmsg.DescribeClusterResponse)
		var ids []int32
		var fenced []bool
		for _, b := range resp.Brokers {
			ids = append(ids, b.NodeID)
			fenced = append(fenced, b.IsFenced)
		}
		want, wantFenced := []int32{1, 2}, []bool{false, false}
		if include {
			want, wantFenced = []int32{1, 2, 3}, []bool{false, false, true}
		}
		if resp.ErrorCode != 0 || fmt.Sprint(ids) != fmt.Sprint(want) || fmt.Sprint(fenced) != fmt.Sprint(wantFenced) || resp.ControllerID != 1 {
			t.Errorf("v2 include fenced %v: error %d brokers %v fenced %v controller %d", include, resp.ErrorCode, ids, fenced, resp.ControllerID)
		}
	}
}
