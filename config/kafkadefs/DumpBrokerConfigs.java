// DumpBrokerConfigs prints the broker settings of the Kafka jars on the
// class path as config/kafka_broker_configs.tsv (see gen.sh): one line per
// setting, sorted by name, tab-separated:
//
//   name  type  default  mode  internal  validator  synonyms  listener-only
//
// default is Kafka's default as DescribeConfigs prints it, "<null>" for a
// null default and "<required>" for none; mode is read-only, per-broker or
// cluster-wide (DynamicBrokerConfig's update mode); internal is true for
// settings DescribeConfigs does not list; validator is the ConfigDef
// validator's description ("" for none); synonyms are the names of
// DynamicBrokerConfig.brokerConfigSynonyms, comma-separated, most specific
// first; listener-only is true for the security settings that AlterConfigs
// takes only with a listener prefix (DYNAMIC_SECURITY_CONFIGS). Tabs and newlines in a field are replaced by spaces.
import java.util.*;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.server.config.AbstractKafkaConfig;
import org.apache.kafka.server.config.DynamicBrokerConfig;

public class DumpBrokerConfigs {
    public static void main(String[] args) {
        Map<String, ConfigDef.ConfigKey> keys = new TreeMap<>(AbstractKafkaConfig.CONFIG_DEF.configKeys());
        Map<String, String> modes = DynamicBrokerConfig.dynamicConfigUpdateModes();
        StringBuilder out = new StringBuilder();
        for (ConfigDef.ConfigKey k : keys.values()) {
            String dflt;
            if (k.defaultValue == ConfigDef.NO_DEFAULT_VALUE) {
                dflt = "<required>";
            } else if (k.defaultValue == null) {
                dflt = "<null>";
            } else {
                dflt = ConfigDef.convertToString(k.defaultValue, k.type);
            }
            String mode = modes.getOrDefault(k.name, "read-only");
            String validator = k.validator == null ? "" : k.validator.toString();
            List<String> syn = DynamicBrokerConfig.brokerConfigSynonyms(k.name, false);
            out.append(String.join("\t", clean(k.name), k.type.name(), clean(dflt), mode,
                    Boolean.toString(k.internalConfig), clean(validator), clean(String.join(",", syn)),
                    Boolean.toString(DynamicBrokerConfig.DYNAMIC_SECURITY_CONFIGS.contains(k.name))));
            out.append('\n');
        }
        System.out.print(out);
    }

    static String clean(String s) {
        return s.replace('\t', ' ').replace('\n', ' ').replace('\r', ' ');
    }
}
