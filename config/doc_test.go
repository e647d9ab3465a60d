package config

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the settings tables in doc.go and docs/CONFIG.md")

const (
	tableBegin = "// BEGIN SETTINGS TABLE\n"
	tableEnd   = "// END SETTINGS TABLE\n"
)

// docTable renders MarkdownTable as doc comment lines, indented with a tab
// so gofmt keeps them as a preformatted block.
func docTable() string {
	var b strings.Builder
	b.WriteString("//\n")
	for _, line := range strings.Split(strings.TrimSuffix(MarkdownTable(), "\n"), "\n") {
		b.WriteString("//\t" + line + "\n")
	}
	b.WriteString("//\n")
	return b.String()
}

// TestDocTable keeps the settings table in doc.go equal to MarkdownTable.
// Run with -update to rewrite it after changing BrokerDefs.
func TestDocTable(t *testing.T) {
	data, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	i, j := strings.Index(text, tableBegin), strings.Index(text, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("doc.go lacks the %q ... %q markers", tableBegin, tableEnd)
	}
	got, want := text[i+len(tableBegin):j], docTable()
	if got == want {
		return
	}
	if !*update {
		t.Fatalf("doc.go settings table is stale; run go test ./config -run TestDocTable -update")
	}
	text = text[:i+len(tableBegin)] + want + text[j:]
	if err := os.WriteFile("doc.go", []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDocTableConfigMarkdown keeps the generated tables of docs/CONFIG.md (the
// implemented broker settings and the Kafka settings accepted but not
// acted on) equal to MarkdownTable and AcceptedMarkdownTable; -update
// rewrites them.
func TestDocTableConfigMarkdown(t *testing.T) {
	const path = "../docs/CONFIG.md"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	stale := false
	for _, section := range []struct{ name, want string }{
		{"BROKER SETTINGS", MarkdownTable()},
		{"ACCEPTED SETTINGS", AcceptedMarkdownTable()},
	} {
		begin, end := "<!-- BEGIN "+section.name+" (generated) -->\n", "<!-- END "+section.name+" -->\n"
		i, j := strings.Index(text, begin), strings.Index(text, end)
		if i < 0 || j < i {
			t.Fatalf("%s lacks the %q ... %q markers", path, begin, end)
		}
		if text[i+len(begin):j] != section.want {
			stale = true
			text = text[:i+len(begin)] + section.want + text[j:]
		}
	}
	if !stale {
		return
	}
	if !*update {
		t.Fatalf("%s is stale; run go test ./config -run TestDocTable -update", path)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
