package diff

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FieldDiff is one field whose value differs between Kafka's and samsa's
// answer to the same request.
type FieldDiff struct {
	// Path names the field with its indexes, ".Topics[0].Partitions[2].ErrorCode".
	Path string
	// Kafka and Samsa are the two values, formatted.
	Kafka, Samsa string
}

// Key is Path with every index replaced by [*], so one difference repeated
// over partitions or entries counts once.
func (d FieldDiff) Key() string { return starIndexes(d.Path) }

func starIndexes(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] != '[' {
			b.WriteByte(p[i])
			continue
		}
		j := strings.IndexByte(p[i:], ']')
		if j < 0 {
			b.WriteString(p[i:])
			break
		}
		b.WriteString("[*]")
		i += j
	}
	return b.String()
}

// maskKind says how a field that legitimately differs is compared.
type maskKind int

const (
	// maskSkip: not compared at all.
	maskSkip maskKind = iota + 1
	// maskSet: only whether it is set (non-zero, non-empty, not -1) is compared.
	maskSet
)

// fieldMasks lists, by field name in the kmsg structs, what legitimately
// differs between two brokers: generated ids, clocks, addresses, throttle
// times and free-text error messages (only the code is specified).
var fieldMasks = map[string]maskKind{
	"ThrottleMillis": maskSkip,
	"UnknownTags":    maskSkip,
	// ErrorMessage: free text, but whether it is null is compared where
	// both answers' ErrorCode is 0 (see walkErrorMessage).
	"ErrorMessage": maskSkip,
	"Host":         maskSkip,
	"Port":         maskSkip,
	"ClusterID":    maskSkip,
	"Rack":         maskSkip,
	"LogDir":       maskSkip,
	"TotalBytes":   maskSkip,
	"UsableBytes":  maskSkip,
	"Dir":          maskSkip, // DescribeLogDirs: the log directory's path
	// Documentation is Kafka's prose; only whether it is there is compared
	// (we write our own text).
	"Documentation": maskSet,

	"TopicID":                    maskSet,
	"MemberID":                   maskSet,
	"LeaderID":                   maskSet, // JoinGroup: the leader's member id
	"ProducerID":                 maskSet,
	"MemberEpoch":                maskSet, // KIP-848: epochs follow assignment timing
	"LogAppendTime":              maskSet,
	"Timestamp":                  maskSet,
	"StartTimestamp":             maskSet,
	"LastTimestamp":              maskSet,
	"TransactionStartTimestamp":  maskSet,
	"TransactionStartTimeMillis": maskSet,
	"LastUpdateTimestamp":        maskSet,
	"LastFetchTimestamp":         maskSet, // DescribeQuorum: when each voter last fetched
	"LastCaughtUpTimestamp":      maskSet,
	"DurationMillis":             maskSet,
	"CoordinatorEpoch":           maskSet,
	"AssignmentEpoch":            maskSet,
	"GroupEpoch":                 maskSet,
	"CurrentTxnStartOffset":      maskSet,
	"SessionID":                  maskSet, // Fetch sessions: Kafka's ids are random

}

// Compare walks the two values (kmsg responses of one type and version)
// field by field and returns every difference not masked by fieldMasks.
func Compare(kafka, samsa any) []FieldDiff {
	var out []FieldDiff
	walk("", reflect.ValueOf(kafka), reflect.ValueOf(samsa), 0, &out)
	return out
}

func walk(path string, k, s reflect.Value, mask maskKind, out *[]FieldDiff) {
	if mask == maskSkip {
		return
	}
	if mask == maskSet {
		ks, ss := isSet(k), isSet(s)
		if ks != ss {
			*out = append(*out, FieldDiff{Path: path, Kafka: setString(ks, k), Samsa: setString(ss, s)})
		}
		return
	}
	if !k.IsValid() || !s.IsValid() {
		if k.IsValid() != s.IsValid() {
			*out = append(*out, FieldDiff{Path: path, Kafka: show(k), Samsa: show(s)})
		}
		return
	}
	switch k.Kind() {
	case reflect.Pointer, reflect.Interface:
		if k.IsNil() || s.IsNil() {
			if k.IsNil() != s.IsNil() {
				*out = append(*out, FieldDiff{Path: path, Kafka: show(k), Samsa: show(s)})
			}
			return
		}
		walk(path, k.Elem(), s.Elem(), 0, out)
	case reflect.Struct:
		t := k.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() || f.Name == "Version" {
				continue
			}
			if f.Name == "ErrorMessage" {
				walkErrorMessage(path+"."+f.Name, k, s, k.Field(i), s.Field(i), out)
				continue
			}
			walk(path+"."+f.Name, k.Field(i), s.Field(i), fieldMasks[f.Name], out)
		}
	case reflect.Slice:
		if field, ok := keyedSlices[k.Type().Elem()]; ok {
			walkKeyed(path, k, s, field, out)
			return
		}
		if k.Type().Elem().Kind() == reflect.Uint8 {
			if !bytes.Equal(k.Bytes(), s.Bytes()) || k.IsNil() != s.IsNil() {
				*out = append(*out, FieldDiff{Path: path, Kafka: show(k), Samsa: show(s)})
			}
			return
		}
		if k.Len() != s.Len() {
			*out = append(*out, FieldDiff{Path: path + ".len", Kafka: fmt.Sprint(k.Len()), Samsa: fmt.Sprint(s.Len())})
		}
		for i := 0; i < min(k.Len(), s.Len()); i++ {
			walk(fmt.Sprintf("%s[%d]", path, i), k.Index(i), s.Index(i), 0, out)
		}
	case reflect.Map:
		for _, key := range k.MapKeys() {
			walk(fmt.Sprintf("%s[%v]", path, key), k.MapIndex(key), s.MapIndex(key), 0, out)
		}
		for _, key := range s.MapKeys() {
			if !k.MapIndex(key).IsValid() {
				*out = append(*out, FieldDiff{Path: fmt.Sprintf("%s[%v]", path, key), Kafka: "absent", Samsa: show(s.MapIndex(key))})
			}
		}
	default:
		if !reflect.DeepEqual(k.Interface(), s.Interface()) {
			*out = append(*out, FieldDiff{Path: path, Kafka: show(k), Samsa: show(s)})
		}
	}
}

// errorMessageNullness, when DIFF_ERROR_MESSAGE=null, compares whether
// ErrorMessage is null in every result, failed ones too (to survey where
// Kafka sets one); by default only successful results' are compared.
var errorMessageNullness = os.Getenv("DIFF_ERROR_MESSAGE") == "null"

// walkErrorMessage compares the ErrorMessage fields k and s of the
// structs kp and sp: their text is free, but whether it is null is not
// (a client may print or test a "" message; Kafka 4.4 answers "" on
// success in some responses and null in others). Only results that
// succeeded on both sides (ErrorCode 0) are compared, unless
// errorMessageNullness; a struct without an ErrorCode is skipped.
func walkErrorMessage(path string, kp, sp, k, s reflect.Value, out *[]FieldDiff) {
	if k.Kind() != reflect.Pointer {
		return
	}
	if !errorMessageNullness {
		kc, sc := kp.FieldByName("ErrorCode"), sp.FieldByName("ErrorCode")
		if !kc.IsValid() || !sc.IsValid() || kc.Int() != 0 || sc.Int() != 0 {
			return
		}
	}
	if k.IsNil() != s.IsNil() {
		*out = append(*out, FieldDiff{Path: path, Kafka: show(k), Samsa: show(s)})
	}
}

// keyedSlices are the lists compared by a key field rather than by
// position: an entry missing from one side is one difference named by its
// key, not a shift of every later entry.
var keyedSlices = map[reflect.Type]string{
	reflect.TypeFor[kmsg.DescribeConfigsResponseResourceConfig]():              "Name",
	reflect.TypeFor[kmsg.DescribeConfigsResponseResourceConfigConfigSynonym](): "Source",
	reflect.TypeFor[kmsg.ApiVersionsResponseApiKey]():                          "ApiKey",
	// Feature flags: Kafka lists them in its hash maps' order.
	reflect.TypeFor[kmsg.ApiVersionsResponseSupportedFeature]():          "Name",
	reflect.TypeFor[kmsg.ApiVersionsResponseFinalizedFeature]():          "Name",
	reflect.TypeFor[kmsg.MetadataResponseTopic]():                        "Topic",
	reflect.TypeFor[kmsg.ListGroupsResponseGroup]():                      "Group",
	reflect.TypeFor[kmsg.CreateTopicsResponseTopic]():                    "Topic",
	reflect.TypeFor[kmsg.CreateTopicsResponseTopicConfig]():              "Name",
	reflect.TypeFor[kmsg.DescribeGroupsResponseGroup]():                  "Group",
	reflect.TypeFor[kmsg.ConsumerGroupDescribeResponseGroup]():           "Group",
	reflect.TypeFor[kmsg.DeleteGroupsResponseGroup]():                    "Group",
	reflect.TypeFor[kmsg.DeleteTopicsResponseTopic]():                    "Topic",
	reflect.TypeFor[kmsg.DescribeLogDirsResponseDirTopic]():              "Topic",
	reflect.TypeFor[kmsg.DescribeTransactionsResponseTransactionState](): "TransactionalID",
	reflect.TypeFor[kmsg.ListTransactionsResponseTransactionState]():     "TransactionalID",
	reflect.TypeFor[kmsg.OffsetFetchResponseTopicPartition]():            "Partition",
	reflect.TypeFor[kmsg.OffsetFetchResponseGroupTopicPartition]():       "Partition",
	reflect.TypeFor[kmsg.OffsetFetchResponseGroup]():                     "Group",
	// SCRAM results: Kafka answers in the order it met the users,
	// samsa sorted by name.
	reflect.TypeFor[kmsg.AlterUserSCRAMCredentialsResponseResult]():    "User",
	reflect.TypeFor[kmsg.DescribeUserSCRAMCredentialsResponseResult](): "User",
}

// walkKeyed compares two lists entry by entry, matched by the key field;
// the path names the key in braces, which Key keeps.
func walkKeyed(path string, k, s reflect.Value, field string, out *[]FieldDiff) {
	keyOf := func(v reflect.Value) string {
		f := v.FieldByName(field)
		if f.Kind() == reflect.Pointer {
			if f.IsNil() {
				return "null"
			}
			f = f.Elem()
		}
		if field == "ApiKey" {
			return kmsg.NameForKey(int16(f.Int()))
		}
		return fmt.Sprint(f.Interface())
	}
	index := func(v reflect.Value) (map[string]reflect.Value, []string) {
		m := map[string]reflect.Value{}
		var order []string
		for i := 0; i < v.Len(); i++ {
			key := keyOf(v.Index(i))
			if _, dup := m[key]; dup {
				key = fmt.Sprintf("%s#%d", key, i)
			}
			m[key] = v.Index(i)
			order = append(order, key)
		}
		return m, order
	}
	km, korder := index(k)
	sm, sorder := index(s)
	if k.IsNil() != s.IsNil() {
		*out = append(*out, FieldDiff{Path: path, Kafka: show(k), Samsa: show(s)})
	}
	for _, key := range korder {
		p := fmt.Sprintf("%s{%s}", path, key)
		if sv, ok := sm[key]; ok {
			walk(p, km[key], sv, 0, out)
		} else {
			*out = append(*out, FieldDiff{Path: p, Kafka: "present", Samsa: "absent"})
		}
	}
	for _, key := range sorder {
		if _, ok := km[key]; !ok {
			*out = append(*out, FieldDiff{Path: fmt.Sprintf("%s{%s}", path, key), Kafka: "absent", Samsa: "present"})
		}
	}
}

// isSet reports whether a masked value is "set": not the zero value, not
// -1, not an empty string or nil pointer.
func isSet(v reflect.Value) bool {
	if !v.IsValid() {
		return false
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return false
		}
		return isSet(v.Elem())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() >= 0
	case reflect.String:
		return v.String() != ""
	case reflect.Slice, reflect.Map:
		return v.Len() > 0
	default:
		return !v.IsZero()
	}
}

func setString(set bool, v reflect.Value) string {
	if set {
		return "set(" + show(v) + ")"
	}
	return "unset(" + show(v) + ")"
}

func show(v reflect.Value) string {
	if !v.IsValid() {
		return "absent"
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return "null"
		}
		return show(v.Elem())
	case reflect.Slice:
		if v.IsNil() {
			return "null"
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			b := v.Bytes()
			if len(b) > 24 {
				return fmt.Sprintf("%d bytes %x...", len(b), b[:24])
			}
			return fmt.Sprintf("%d bytes %x", len(b), b)
		}
	case reflect.String:
		s := v.String()
		if len(s) > 80 {
			s = s[:80] + "..."
		}
		return fmt.Sprintf("%q", s)
	}
	s := fmt.Sprintf("%+v", v.Interface())
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
