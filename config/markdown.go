package config

import (
	"strings"
)

// MarkdownTable returns the README table of the broker settings samsa
// implements: name, default and description. Dynamic settings are marked.
func MarkdownTable() string {
	var b strings.Builder
	b.WriteString("| Name | Default | Description |\n")
	b.WriteString("|------|---------|-------------|\n")
	for _, d := range BrokerDefs {
		dflt := "null"
		if d.HasDefault {
			dflt = "`" + d.Default + "`"
			if d.Default == "" {
				dflt = `""`
			}
		}
		doc := d.Doc
		if d.Dynamic {
			doc += " (dynamic)"
		}
		b.WriteString("| `" + d.Name + "` | " + dflt + " | " + strings.ReplaceAll(doc, "|", `\|`) + " |\n")
	}
	return b.String()
}

// TopicMarkdownTable returns the README table of topic settings: name,
// broker setting that supplies the default, Kafka's default and description.
func TopicMarkdownTable() string {
	var b strings.Builder
	b.WriteString("| Name | Broker default from | Default | Description |\n")
	b.WriteString("|------|---------------------|---------|-------------|\n")
	for _, d := range topicDefs {
		syn := "-"
		if d.BrokerSynonym != "" {
			syn = "`" + d.BrokerSynonym + "`"
		}
		dflt := `""`
		if d.Default != "" {
			dflt = "`" + d.Default + "`"
		}
		b.WriteString("| `" + d.Name + "` | " + syn + " | " + dflt + " | " + strings.ReplaceAll(d.Doc, "|", `\|`) + " |\n")
	}
	return b.String()
}
