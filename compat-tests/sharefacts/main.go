package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func main() {
	bootstrap := flag.String("bootstrap", "127.0.0.1:9092", "broker address")
	step := flag.String("step", "all", "step to run: versions, configs, group, fetch, admin, all")
	flag.Parse()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(*bootstrap, ",")...), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequestTimeoutOverhead(5*time.Second))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := &prober{cl: cl, ctx: ctx}
	steps := map[string]func(){
		"versions":  p.versions,
		"configs":   p.configs,
		"gconfigs":  p.groupConfigs,
		"group":     p.groupScenario,
		"admin":     p.adminScenario,
		"more":      p.moreScenario,
		"notleader": p.notLeaderScenario,
		"v2":        p.v2Scenario,
		"gaps":      p.gapsScenario,
		"s28":       p.s28Scenario,
		"s28dup":    p.s28DupScenario,
		"s28past":   p.s28PastScenario,
		"s28msg":    p.s28MsgScenario,
	}
	for name, fn := range steps {
		if *step == "all" || *step == name {
			fn()
		}
	}
}

type prober struct {
	cl  *kgo.Client
	ctx context.Context
}

func (p *prober) show(label string, v any) {
	b, _ := json.Marshal(v)
	s := strings.ReplaceAll(string(b), `,"UnknownTags":{}`, "")
	s = strings.ReplaceAll(s, `"UnknownTags":{}`, "")
	fmt.Printf("### %s\n%s\n", label, s)
}

func (p *prober) req(label string, r kmsg.Request) kmsg.Response {
	resp, err := p.cl.Request(p.ctx, r)
	if err != nil {
		fmt.Printf("### %s: error %v\n", label, err)
		return nil
	}
	p.show(label, resp)
	return resp
}

func (p *prober) versions() {
	r := kmsg.NewPtrApiVersionsRequest()
	r.ClientSoftwareName = "sharefacts"
	r.ClientSoftwareVersion = "1"
	resp, err := r.RequestWith(p.ctx, p.cl)
	if err != nil {
		fmt.Println("versions:", err)
		return
	}
	for _, k := range resp.ApiKeys {
		switch {
		case k.ApiKey >= 76 && k.ApiKey <= 79, k.ApiKey >= 83 && k.ApiKey <= 87, k.ApiKey >= 90 && k.ApiKey <= 92:
			name := kmsg.NameForKey(k.ApiKey)
			fmt.Printf("key %d %s: %d-%d\n", k.ApiKey, name, k.MinVersion, k.MaxVersion)
		}
	}
	p.show("supported features", resp.SupportedFeatures)
	p.show("finalized features", resp.FinalizedFeatures)
	fmt.Println("finalized features epoch", resp.FinalizedFeaturesEpoch)
}

func (p *prober) configs() {
	r := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType = kmsg.ConfigResourceTypeBroker
	rr.ResourceName = "1"
	r.Resources = append(r.Resources, rr)
	r.IncludeDocumentation = false
	r.IncludeSynonyms = false
	resp, err := r.RequestWith(p.ctx, p.cl)
	if err != nil {
		fmt.Println("configs:", err)
		return
	}
	for _, res := range resp.Resources {
		for _, c := range res.Configs {
			if strings.Contains(c.Name, "share") {
				v := "null"
				if c.Value != nil {
					v = *c.Value
				}
				fmt.Printf("broker %s=%s (source %v, ro %v, sensitive %v)\n", c.Name, v, c.Source, c.ReadOnly, c.IsSensitive)
			}
		}
	}
}
