// StreamsAssignorGolden runs Kafka 4.4's own streams group task assignor
// (org.apache.kafka.coordinator.group.streams.assignor.StickyTaskAssignor, from
// kafka-group-coordinator-4.4.0.jar) on seeded random groups and prints each group
// and Kafka's assignment as one JSON line; coordinator's TestStreamsAssignorMatchesKafka
// replays them against samsa's assignStreamsTasks. Regenerate (Kafka 4.4's jars from
// compat-tests/kafka-ref) with:
//
//   CP=$(compat-tests/kafka-ref/kafka-ref.sh classpath)
//   javac -d /tmp/sag -cp "$CP" coordinator/testdata/streams_assignor/StreamsAssignorGolden.java
//   java -cp "/tmp/sag:$CP" StreamsAssignorGolden 400 > coordinator/testdata/streams_assignor/kafka44.jsonl
//
// The members map is a HashMap filled in member id order, as samsa assumes (Kafka's
// TargetAssignmentBuilder fills a HashMap from its group's member table).
import java.util.*;
import org.apache.kafka.coordinator.group.api.streams.assignor.*;
import org.apache.kafka.coordinator.group.streams.assignor.*;

public class StreamsAssignorGolden {
    static final Random R = new Random(20261207L);

    static String id(int len) {
        String a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < len; i++) b.append(a.charAt(R.nextInt(a.length())));
        return b.toString();
    }

    static String tasksJson(Map<String, Set<Integer>> m) {
        StringBuilder b = new StringBuilder("{");
        for (String s : new TreeSet<>(m.keySet())) {
            if (m.get(s).isEmpty()) continue;
            if (b.length() > 1) b.append(',');
            b.append('"').append(s).append("\":").append(new TreeSet<>(m.get(s)).toString().replace(" ", ""));
        }
        return b.append('}').toString();
    }

    static String offsetsJson(Map<String, Map<Integer, Long>> m) {
        StringBuilder b = new StringBuilder("{");
        for (String s : new TreeSet<>(m.keySet())) {
            if (b.length() > 1) b.append(',');
            b.append('"').append(s).append("\":{");
            boolean first = true;
            for (Map.Entry<Integer, Long> e : new TreeMap<>(m.get(s)).entrySet()) {
                if (!first) b.append(',');
                first = false;
                b.append('"').append(e.getKey()).append("\":").append(e.getValue());
            }
            b.append('}');
        }
        return b.append('}').toString();
    }

    static Map<String, Set<Integer>> randomTasks(SortedMap<String, Integer> subs, double p) {
        Map<String, Set<Integer>> m = new HashMap<>();
        for (Map.Entry<String, Integer> e : subs.entrySet())
            for (int i = 0; i < e.getValue(); i++)
                if (R.nextDouble() < p) m.computeIfAbsent(e.getKey(), k -> new HashSet<>()).add(i);
        return m;
    }

    public static void main(String[] args) {
        int n = Integer.parseInt(args[0]);
        for (int iter = 0; iter < n; iter++) {
            // The topology: 1-3 subtopologies ("0", "1", ... or longer ids), 1-8 partitions,
            // some stateful.
            SortedMap<String, Integer> subs = new TreeMap<>();
            Set<String> stateful = new HashSet<>();
            int ns = 1 + R.nextInt(3);
            for (int s = 0; s < ns; s++) {
                String sid = R.nextInt(4) == 0 ? "sub-" + s + id(3) : Integer.toString(s);
                subs.put(sid, 1 + R.nextInt(8));
                if (R.nextInt(3) > 0) stateful.add(sid);
            }
            int standbys = R.nextInt(3);
            int nm = 1 + R.nextInt(7);
            int np = 1 + R.nextInt(nm);
            List<String> procs = new ArrayList<>();
            for (int i = 0; i < np; i++) procs.add(id(8) + "-" + id(4));
            // Previous state: none, random (overlaps allowed), or a previous Kafka
            // assignment of a changed membership (realistic).
            int mode = R.nextInt(3);
            TreeMap<String, MemberMetadataAndStateImpl> members = new TreeMap<>();
            List<String> ids = new ArrayList<>();
            for (int i = 0; i < nm; i++) ids.add(R.nextInt(5) == 0 ? "m" + i : id(22));
            Map<String, String> procOf = new HashMap<>();
            for (int i = 0; i < nm; i++) procOf.put(ids.get(i), procs.get(i < np ? i : R.nextInt(np)));
            Map<String, MemberAssignment> prev = new HashMap<>();
            if (mode == 2) {
                // Kafka's assignment of the same group with one member more or less.
                TreeMap<String, MemberMetadataAndStateImpl> before = new TreeMap<>();
                for (String m : ids) {
                    if (nm > 1 && R.nextInt(nm) == 0) continue;
                    before.put(m, member(procOf.get(m), Map.of(), Map.of(), Map.of()));
                }
                if (R.nextBoolean()) before.put(id(22), member(procs.get(R.nextInt(np)), Map.of(), Map.of(), Map.of()));
                if (!before.isEmpty()) prev = assign(before, subs, stateful, standbys).members();
            }
            for (String m : ids) {
                Map<String, Set<Integer>> act = Map.of(), sb = Map.of();
                if (mode == 1) {
                    act = randomTasks(subs, 0.7 / nm);
                    sb = randomTasks(subs, 0.5 / nm);
                } else if (mode == 2 && prev.containsKey(m)) {
                    act = prev.get(m).activeTasks();
                    sb = prev.get(m).standbyTasks();
                }
                Map<String, Map<Integer, Long>> off = new HashMap<>();
                if (R.nextInt(3) == 0) {
                    for (Map.Entry<String, Set<Integer>> e : randomTasks(subs, 0.4).entrySet())
                        for (int p : e.getValue())
                            off.computeIfAbsent(e.getKey(), k -> new HashMap<>()).put(p, R.nextBoolean() ? 100L * R.nextInt(4) : -2L);
                }
                members.put(m, member(procOf.get(m), act, sb, off));
            }
            GroupAssignment ga = assign(members, subs, stateful, standbys);
            StringBuilder b = new StringBuilder("{\"standbys\":").append(standbys).append(",\"subtopologies\":[");
            boolean first = true;
            for (Map.Entry<String, Integer> e : subs.entrySet()) {
                if (!first) b.append(',');
                first = false;
                b.append("{\"id\":\"").append(e.getKey()).append("\",\"partitions\":").append(e.getValue())
                    .append(",\"stateful\":").append(stateful.contains(e.getKey())).append('}');
            }
            b.append("],\"members\":[");
            first = true;
            for (Map.Entry<String, MemberMetadataAndStateImpl> e : members.entrySet()) {
                if (!first) b.append(',');
                first = false;
                MemberMetadataAndStateImpl m = e.getValue();
                b.append("{\"id\":\"").append(e.getKey()).append("\",\"process\":\"").append(m.processId())
                    .append("\",\"active\":").append(tasksJson(m.activeTasks()))
                    .append(",\"standby\":").append(tasksJson(m.standbyTasks()))
                    .append(",\"offsets\":").append(offsetsJson(m.taskOffsets())).append('}');
            }
            b.append("],\"kafka\":{");
            first = true;
            for (String m : new TreeSet<>(ga.members().keySet())) {
                if (!first) b.append(',');
                first = false;
                MemberAssignment a = ga.members().get(m);
                b.append('"').append(m).append("\":{\"active\":").append(tasksJson(a.activeTasks()))
                    .append(",\"standby\":").append(tasksJson(a.standbyTasks())).append('}');
            }
            System.out.println(b.append("}}"));
        }
    }

    static MemberMetadataAndStateImpl member(String proc, Map<String, Set<Integer>> act, Map<String, Set<Integer>> sb,
                                             Map<String, Map<Integer, Long>> off) {
        return new MemberMetadataAndStateImpl(Optional.empty(), Optional.empty(), proc, Map.of(), act, sb, Map.of(), off, Map.of());
    }

    static GroupAssignment assign(SortedMap<String, MemberMetadataAndStateImpl> sorted, SortedMap<String, Integer> subs,
                                  Set<String> stateful, int standbys) {
        Map<String, MemberMetadataAndStateImpl> members = new HashMap<>();
        for (Map.Entry<String, MemberMetadataAndStateImpl> e : sorted.entrySet()) members.put(e.getKey(), e.getValue());
        TopologyDescriber topo = new TopologyDescriber() {
            public List<String> subtopologies() { return new ArrayList<>(subs.keySet()); }
            public int maxNumInputPartitions(String s) { return subs.get(s); }
            public boolean isStateful(String s) { return stateful.contains(s); }
        };
        try {
            return new StickyTaskAssignor().assign(new GroupSpecImpl(members, new AssignmentConfigsImpl(standbys, List.of())), topo);
        } catch (TaskAssignorException x) {
            throw new RuntimeException(x);
        }
    }
}
