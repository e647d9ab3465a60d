package org.apache.kafka.common.utils;

/**
 * AppInfoParser bridges connect-file 4.3.1 to kafka-clients 4.4.0. Maven Central serves no
 * connect-file 4.4.0, and the 4.3.1 FileStream connectors report their version through
 * org.apache.kafka.common.utils.AppInfoParser.getVersion(), a class kafka-clients 4.4 moved to
 * org.apache.kafka.common.utils.internals; without this class the worker cannot load them
 * (NoClassDefFoundError). It is the only 4.3-to-4.4 reference connect-file lacks, and it only
 * exists on the classpath of the compat checks, never in samsa.
 */
public final class AppInfoParser {
    private AppInfoParser() {}

    /** getVersion returns the kafka-clients version, as the 4.3 method did. */
    public static String getVersion() {
        return org.apache.kafka.common.utils.internals.AppInfoParser.getVersion();
    }
}
