package diff

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestDbg(t *testing.T) {
	for name, addr := range map[string]string{"kafka": os.Getenv("DIFF_KAFKA_ADDR"), "samsa": os.Getenv("DIFF_SAMSA_ADDR")} {
		s, err := NewSession(name, addr)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]any{}
		out["broker"] = s.Do("x", 4, describeConfigsReq(4, kmsg.ConfigResourceTypeBroker, "1"))
		out["topic"] = s.Do("x", 4, describeConfigsReq(4, kmsg.ConfigResourceTypeTopic, "diff-a"))
		b, _ := json.MarshalIndent(out, "", " ")
		os.WriteFile("/tmp/hdiff/cfg-"+name+".json", b, 0o644)
	}
}
