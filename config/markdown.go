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

// AcceptedMarkdownTable returns the table of the Kafka 4.4 broker settings
// samsa accepts, lists in DescribeConfigs and validates like Kafka, but does
// not act on (Def.Ignored; Kafka's internal settings left out): name,
// type, Kafka's default and update mode.
func AcceptedMarkdownTable() string {
	var b strings.Builder
	b.WriteString("| Name | Type | Default | Update mode |\n")
	b.WriteString("|------|------|---------|-------------|\n")
	for _, d := range allBrokerDefs {
		if !d.Ignored || d.Unlisted {
			continue
		}
		dflt := "null"
		if d.HasDefault {
			dflt = "`" + d.Default + "`"
			if d.Default == "" {
				dflt = `""`
			}
		}
		if d.KafkaRequired {
			dflt = "required"
		}
		mode := ReadOnly
		switch {
		case d.PerBroker:
			mode = PerBroker
		case d.Dynamic:
			mode = ClusterWide
		}
		b.WriteString("| `" + d.Name + "` | " + strings.ToLower(d.Type.String()) + " | " + strings.ReplaceAll(dflt, "|", `\|`) + " | " + mode.String() + " |\n")
	}
	return b.String()
}
