// pushgrid JMX bridge: mirrors every pushgrid:* MBean of one member from its Jolokia endpoint into
// this JVM's platform MBeanServer, so jconsole, VisualVM, Zabbix and jmxquery can read it over JMX.
//
// Run with the JDK 17 source launcher (no build step, no third-party jars):
//
//   PUSHGRID_JOLOKIA_USERNAME=u PUSHGRID_JOLOKIA_PASSWORD=p \
//   java -Dcom.sun.management.config.file=management.properties Bridge.java \
//        --jolokia http://127.0.0.1:8900/jolokia --refresh 1.0
//
// `pushgrid jmx --config FILE` writes the management/password/access files and runs this for you.
// The JMX connector itself (RMI registry, password and access files, TLS) is the JDK's own
// out-of-the-box agent, configured by the management.properties file: nothing here handles
// credentials of JMX clients.
//
// Values: every refresh reads all attributes of every pushgrid:* MBean in ONE Jolokia request and
// replaces the cache. An attribute is served only while the last refresh succeeded and is younger
// than the freshness limit; otherwise reading it fails with "member unreachable" (no stale values
// presented as fresh). The MBeans stay registered through member restarts so tools keep their tree.
// Types: Jolokia "long/int/double/boolean/String" map to the open SimpleTypes; maps become
// CompositeData (a map of same-shaped maps becomes TabularData keyed by "key"); their types are
// inferred from the values and re-inferred when a value no longer fits. Operations are forwarded
// with Jolokia exec; list and map results are returned as JSON text (their shape is per call).
//
// Client mode (used by the admin API to call operations, as jmxquery cannot):
//   PUSHGRID_JMX_USERNAME=u PUSHGRID_JMX_PASSWORD=p \
//   java Bridge.java invoke service:jmx:rmi:///jndi/rmi://127.0.0.1:9010/jmxrmi MBEAN OP [ARG...]
// prints {"value": ...} (or {"error": ..., "error_type": ...} and exit code 1) on stdout.

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import javax.management.Attribute;
import javax.management.AttributeList;
import javax.management.AttributeNotFoundException;
import javax.management.DynamicMBean;
import javax.management.MBeanException;
import javax.management.MBeanInfo;
import javax.management.MBeanOperationInfo;
import javax.management.MBeanServer;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.ReflectionException;
import javax.management.openmbean.ArrayType;
import javax.management.openmbean.CompositeData;
import javax.management.openmbean.CompositeDataSupport;
import javax.management.openmbean.CompositeType;
import javax.management.openmbean.OpenDataException;
import javax.management.openmbean.OpenMBeanAttributeInfoSupport;
import javax.management.openmbean.OpenMBeanConstructorInfoSupport;
import javax.management.openmbean.OpenMBeanInfoSupport;
import javax.management.openmbean.OpenMBeanOperationInfoSupport;
import javax.management.openmbean.OpenMBeanParameterInfoSupport;
import javax.management.openmbean.OpenType;
import javax.management.openmbean.SimpleType;
import javax.management.openmbean.TabularDataSupport;
import javax.management.openmbean.TabularType;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

public class Bridge {
    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("invoke")) {
            System.exit(Invoke.run(args));
        }
        String jolokia = null;
        double refresh = 1.0;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--jolokia" -> jolokia = args[++i];
                case "--refresh" -> refresh = Double.parseDouble(args[++i]);
                default -> fail("unknown argument " + args[i]);
            }
        }
        if (jolokia == null) fail("--jolokia URL is required");
        if (!(refresh > 0 && refresh <= 1.0)) fail("--refresh must be in (0, 1] seconds");
        Jolokia client = new Jolokia(jolokia, System.getenv("PUSHGRID_JOLOKIA_USERNAME"),
                System.getenv("PUSHGRID_JOLOKIA_PASSWORD"), Duration.ofMillis((long) (refresh * 2000)));
        Mirror mirror = new Mirror(client, ManagementFactory.getPlatformMBeanServer(),
                (long) (refresh * 3000));
        ManagementFactory.getPlatformMBeanServer().registerMBean(
                new javax.management.StandardMBean(mirror.status, StatusMBean.class), Mirror.STATUS_NAME);
        System.out.println("pushgrid JMX bridge: mirroring " + jolokia + " every " + refresh + " s");
        long period = (long) (refresh * 1000);
        while (true) {
            long start = System.currentTimeMillis();
            mirror.refresh();
            long wait = period - (System.currentTimeMillis() - start);
            if (wait > 0) Thread.sleep(wait);
        }
    }

    /** The bridge's own state (pushgrid.jmx:type=Bridge); JMX wants a public interface. */
    public interface StatusMBean {
        boolean isConnected();
        String getJolokiaUrl();
        long getLastRefresh();
        String getLastError();
        int getMirroredMBeans();
    }

    static void fail(String message) {
        System.err.println("pushgrid JMX bridge: " + message);
        System.exit(2);
    }
}

/** One member's Jolokia endpoint: POST a JSON request, get the value or an exception. */
final class Jolokia {
    final String url;
    private final String auth;
    private final HttpClient http;
    private final Duration timeout;

    Jolokia(String url, String username, String password, Duration timeout) {
        this.url = url;
        this.timeout = timeout;
        this.auth = username == null ? null : "Basic " + Base64.getEncoder().encodeToString(
                (username + ":" + (password == null ? "" : password)).getBytes(StandardCharsets.UTF_8));
        this.http = HttpClient.newBuilder().connectTimeout(timeout).build();
    }

    Object request(Map<String, Object> request) throws IOException {
        HttpRequest.Builder builder = HttpRequest.newBuilder(URI.create(url)).timeout(timeout)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(Json.write(request)));
        if (auth != null) builder.header("Authorization", auth);
        HttpResponse<String> response;
        try {
            response = http.send(builder.build(), HttpResponse.BodyHandlers.ofString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted");
        }
        if (response.statusCode() == 401) throw new IOException("the member refused the credentials (401)");
        if (response.statusCode() != 200) throw new IOException("HTTP " + response.statusCode() + " from " + url);
        Object answer = Json.parse(response.body());
        if (!(answer instanceof Map<?, ?> map)) throw new IOException("not a Jolokia answer");
        Object status = map.get("status");
        if (!(status instanceof Long code) || code != 200) {
            throw new IOException("Jolokia " + status + " " + map.get("error_type") + ": " + map.get("error"));
        }
        return map.get("value");
    }
}

/** The mirrored MBeans, refreshed from one Jolokia read of pushgrid:*. */
final class Mirror {
    static final ObjectName STATUS_NAME = Types.name("pushgrid.jmx:type=Bridge");
    final Jolokia jolokia;
    final MBeanServer server;
    final long maxAgeMillis;
    final Map<String, MirrorBean> beans = new ConcurrentHashMap<>();
    final Status status = new Status();
    volatile long lastSuccess = 0;
    volatile boolean connected = false;
    volatile String lastError = "not refreshed yet";
    private Map<String, Object> listing = null;

    Mirror(Jolokia jolokia, MBeanServer server, long maxAgeMillis) {
        this.jolokia = jolokia;
        this.server = server;
        this.maxAgeMillis = maxAgeMillis;
    }

    /** Values may be served: the last refresh succeeded and is recent. */
    boolean fresh() {
        return connected && System.currentTimeMillis() - lastSuccess <= maxAgeMillis;
    }

    void refresh() {
        try {
            Map<String, Object> values = Types.map(jolokia.request(Map.of("type", "read", "mbean", "pushgrid:*")));
            if (listing == null || !beans.keySet().equals(canonicalNames(values.keySet()))) {
                listing = Types.map(jolokia.request(Map.of("type", "list", "path", "pushgrid")));
                sync(values);
            }
            for (Map.Entry<String, Object> entry : values.entrySet()) {
                MirrorBean bean = beans.get(Types.name(entry.getKey()).getCanonicalName());
                if (bean != null) bean.update(Types.map(entry.getValue()));
            }
            lastSuccess = System.currentTimeMillis();
            if (!connected) System.out.println("pushgrid JMX bridge: connected to " + jolokia.url);
            connected = true;
            lastError = "";
        } catch (Exception e) {
            String reason = e.getMessage() != null ? e.getMessage() : e.toString();
            if (connected) System.out.println("pushgrid JMX bridge: member unavailable: " + reason);
            connected = false;
            listing = null; // a restarted member may have other MBeans: list again when it is back
            lastError = reason;
        }
    }

    private static Set<String> canonicalNames(Set<String> names) {
        Set<String> out = new LinkedHashSet<>();
        for (String name : names) out.add(Types.name(name).getCanonicalName());
        return out;
    }

    /** Register the listed MBeans that are new, unregister those that are gone. */
    private void sync(Map<String, Object> values) throws Exception {
        Map<String, MirrorBean> wanted = new HashMap<>();
        for (Map.Entry<String, Object> entry : listing.entrySet()) {
            ObjectName name = Types.name("pushgrid:" + entry.getKey());
            MirrorBean existing = beans.get(name.getCanonicalName());
            Map<String, Object> spec = Types.map(entry.getValue());
            wanted.put(name.getCanonicalName(),
                    existing != null ? existing.respec(spec) : new MirrorBean(this, name, spec));
        }
        for (String gone : new ArrayList<>(beans.keySet())) {
            if (!wanted.containsKey(gone)) {
                beans.remove(gone);
                server.unregisterMBean(new ObjectName(gone));
            }
        }
        for (Map.Entry<String, MirrorBean> entry : wanted.entrySet()) {
            if (!beans.containsKey(entry.getKey())) {
                beans.put(entry.getKey(), entry.getValue());
                server.registerMBean(entry.getValue(), entry.getValue().name);
            }
        }
    }

    final class Status implements Bridge.StatusMBean {
        public boolean isConnected() { return fresh(); }
        public String getJolokiaUrl() { return jolokia.url; }
        public long getLastRefresh() { return lastSuccess; }
        public String getLastError() { return lastError; }
        public int getMirroredMBeans() { return beans.size(); }
    }
}

/** One mirrored MBean: cached attribute values, open types, forwarded operations. */
final class MirrorBean implements DynamicMBean {
    final Mirror mirror;
    final ObjectName name;
    private volatile Map<String, Object> spec;
    private final Map<String, OpenType<?>> types = new ConcurrentHashMap<>();
    private volatile Map<String, Object> values = Map.of();
    private volatile MBeanInfo info;

    MirrorBean(Mirror mirror, ObjectName name, Map<String, Object> spec) throws OpenDataException {
        this.mirror = mirror;
        this.name = name;
        respec(spec);
    }

    MirrorBean respec(Map<String, Object> spec) throws OpenDataException {
        this.spec = spec;
        for (Map.Entry<String, Object> attr : Types.map(spec.getOrDefault("attr", Map.of())).entrySet()) {
            OpenType<?> declared = Types.declared(String.valueOf(Types.map(attr.getValue()).get("type")));
            if (declared != null) types.put(attr.getKey(), declared);
        }
        info = null;
        return this;
    }

    /** Store the newly read values, converted to open data; re-infer types that no longer fit. */
    void update(Map<String, Object> raw) throws OpenDataException {
        Map<String, Object> converted = new HashMap<>();
        Map<String, Object> attrSpec = Types.map(spec.getOrDefault("attr", Map.of()));
        for (Map.Entry<String, Object> entry : raw.entrySet()) {
            String attr = entry.getKey();
            if (!attrSpec.containsKey(attr)) continue;
            OpenType<?> type = types.get(attr);
            Object value = type == null ? Types.NO_FIT : Types.convert(entry.getValue(), type);
            if (value == Types.NO_FIT) {
                type = Types.infer(entry.getValue(), attr, type);
                types.put(attr, type);
                info = null;
                value = Types.convert(entry.getValue(), type);
            }
            converted.put(attr, value == Types.NO_FIT ? null : value);
        }
        values = converted;
    }

    @Override
    public Object getAttribute(String attribute) throws AttributeNotFoundException, MBeanException {
        if (!types.containsKey(attribute)) throw new AttributeNotFoundException(attribute);
        if (!mirror.fresh()) {
            throw new MBeanException(new IOException("pushgrid member unavailable: " + mirror.lastError),
                    "pushgrid member unavailable (no fresh value of " + attribute + ")");
        }
        return values.get(attribute);
    }

    @Override
    public AttributeList getAttributes(String[] attributes) {
        AttributeList list = new AttributeList();
        for (String attribute : attributes) {
            try {
                list.add(new Attribute(attribute, getAttribute(attribute)));
            } catch (Exception e) {
                // JMX semantics: attributes that cannot be read are left out of the list
            }
        }
        return list;
    }

    @Override
    public void setAttribute(Attribute attribute) throws AttributeNotFoundException {
        throw new AttributeNotFoundException("pushgrid attributes are read-only: " + attribute.getName());
    }

    @Override
    public AttributeList setAttributes(AttributeList attributes) {
        return new AttributeList();
    }

    @Override
    public Object invoke(String operation, Object[] params, String[] signature)
            throws MBeanException, ReflectionException {
        Map<String, Object> op = Types.map(Types.map(spec.getOrDefault("op", Map.of())).get(operation));
        if (op.isEmpty()) {
            throw new ReflectionException(new NoSuchMethodException(operation), "no operation " + operation);
        }
        Map<String, Object> request = new LinkedHashMap<>();
        request.put("type", "exec");
        request.put("mbean", name.toString());
        request.put("operation", operation);
        request.put("arguments", params == null ? List.of() : java.util.Arrays.asList(params));
        Object result;
        try {
            result = mirror.jolokia.request(request);
        } catch (IOException e) {
            throw new MBeanException(new IOException(e.getMessage()), operation + " failed: " + e.getMessage());
        }
        OpenType<?> type = Types.returned(String.valueOf(op.get("ret")));
        if (type == SimpleType.STRING && !(result instanceof String) && result != null) return Json.write(result);
        try {
            Object value = Types.convert(result, type);
            return value == Types.NO_FIT ? Json.write(result) : value;
        } catch (OpenDataException e) {
            return Json.write(result);
        }
    }

    @Override
    public MBeanInfo getMBeanInfo() {
        MBeanInfo current = info;
        if (current == null) {
            current = buildInfo();
            info = current;
        }
        return current;
    }

    private MBeanInfo buildInfo() {
        List<OpenMBeanAttributeInfoSupport> attrs = new ArrayList<>();
        for (Map.Entry<String, Object> entry : Types.map(spec.getOrDefault("attr", Map.of())).entrySet()) {
            OpenType<?> type = types.get(entry.getKey());
            if (type == null) continue; // a map never read yet: its type is unknown
            String desc = Types.text(Types.map(entry.getValue()).get("desc"), entry.getKey());
            attrs.add(new OpenMBeanAttributeInfoSupport(entry.getKey(), desc, type, true, false, false));
        }
        List<OpenMBeanOperationInfoSupport> ops = new ArrayList<>();
        for (Map.Entry<String, Object> entry : Types.map(spec.getOrDefault("op", Map.of())).entrySet()) {
            Map<String, Object> op = Types.map(entry.getValue());
            List<OpenMBeanParameterInfoSupport> params = new ArrayList<>();
            for (Object arg : Types.list(op.get("args"))) {
                Map<String, Object> a = Types.map(arg);
                OpenType<?> argType = Types.declared(String.valueOf(a.get("type")));
                params.add(new OpenMBeanParameterInfoSupport(String.valueOf(a.get("name")),
                        Types.text(a.get("desc"), String.valueOf(a.get("name"))),
                        argType == null ? SimpleType.STRING : argType));
            }
            String ret = String.valueOf(op.get("ret"));
            String desc = Types.text(op.get("desc"), entry.getKey());
            if (Types.declared(ret) == null && !ret.equals("void")) desc += " " + Invoke.JSON_TEXT;
            ops.add(new OpenMBeanOperationInfoSupport(entry.getKey(), desc,
                    params.toArray(new OpenMBeanParameterInfoSupport[0]), Types.returned(ret),
                    MBeanOperationInfo.UNKNOWN));
        }
        return new OpenMBeanInfoSupport(DynamicMBean.class.getName(),
                Types.text(spec.get("desc"), name.toString()) + " (mirrored from " + mirror.jolokia.url + ")",
                attrs.toArray(new OpenMBeanAttributeInfoSupport[0]),
                new OpenMBeanConstructorInfoSupport[0],
                ops.toArray(new OpenMBeanOperationInfoSupport[0]),
                new javax.management.MBeanNotificationInfo[0]);
    }
}

/** Jolokia/JSON values <-> JMX open types. */
final class Types {
    static final Object NO_FIT = new Object();

    static ObjectName name(String text) {
        try {
            return new ObjectName(text);
        } catch (Exception e) {
            throw new IllegalArgumentException("bad ObjectName " + text, e);
        }
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> map(Object value) {
        return value instanceof Map<?, ?> ? (Map<String, Object>) value : Map.of();
    }

    @SuppressWarnings("unchecked")
    static List<Object> list(Object value) {
        return value instanceof List<?> ? (List<Object>) value : List.of();
    }

    static String text(Object value, String fallback) {
        return value instanceof String s && !s.isEmpty() ? s : fallback;
    }

    /** The open type of a declared Jolokia/Java scalar type, or null for maps, lists and others. */
    static OpenType<?> declared(String type) {
        return switch (type) {
            case "long", "java.lang.Long" -> SimpleType.LONG;
            case "int", "java.lang.Integer" -> SimpleType.INTEGER;
            case "double", "float", "java.lang.Double", "java.lang.Float" -> SimpleType.DOUBLE;
            case "boolean", "java.lang.Boolean" -> SimpleType.BOOLEAN;
            case "java.lang.String" -> SimpleType.STRING;
            default -> null;
        };
    }

    /** An operation's return type: scalars as declared, void, everything else JSON text. */
    static OpenType<?> returned(String type) {
        if (type.equals("void")) return SimpleType.VOID;
        OpenType<?> declared = declared(type);
        return declared == null ? SimpleType.STRING : declared;
    }

    /** The open type of a JSON value; nulls take the type they had before (a number if none). */
    static OpenType<?> infer(Object value, String name, OpenType<?> previous) throws OpenDataException {
        if (value == null) return previous != null ? previous : SimpleType.DOUBLE;
        if (value instanceof Boolean) return SimpleType.BOOLEAN;
        if (value instanceof Long) return previous == SimpleType.DOUBLE ? SimpleType.DOUBLE : SimpleType.LONG;
        if (value instanceof Double) return SimpleType.DOUBLE;
        if (value instanceof String) return SimpleType.STRING;
        if (value instanceof List<?> items) return inferArray(items);
        Map<String, Object> map = map(value);
        if (map.isEmpty()) return SimpleType.STRING; // an empty map has no open type: JSON text
        TabularType tabular = inferTable(map, name, previous);
        if (tabular != null) return tabular;
        return present(map).isEmpty() ? SimpleType.STRING : inferComposite(map, name, previous);
    }

    private static OpenType<?> inferArray(List<?> items) throws OpenDataException {
        SimpleType<?> element = null;
        for (Object item : items) {
            OpenType<?> type = infer(item, "item", element);
            if (!(type instanceof SimpleType<?> simple) || (element != null && simple != element
                    && !(Set.of(SimpleType.LONG, SimpleType.DOUBLE).containsAll(Set.of(simple, element))))) {
                return SimpleType.STRING; // mixed or nested lists: JSON text
            }
            element = element == SimpleType.DOUBLE ? element : simple;
        }
        return new ArrayType<>(1, element == null ? SimpleType.STRING : element);
    }

    /** Null entries are left out of a map's CompositeData (absent = no value), as jmxquery loops
     *  forever on a null item; the type is re-inferred when the set of present keys changes. */
    private static CompositeType inferComposite(Map<String, Object> map, String name, OpenType<?> previous)
            throws OpenDataException {
        CompositeType before = previous instanceof CompositeType c ? c : null;
        String[] keys = present(map).toArray(new String[0]);
        OpenType<?>[] types = new OpenType<?>[keys.length];
        for (int i = 0; i < keys.length; i++) {
            OpenType<?> old = before != null && before.containsKey(keys[i]) ? before.getType(keys[i]) : null;
            types[i] = infer(map.get(keys[i]), keys[i], old);
        }
        return new CompositeType(name, name, keys, keys, types);
    }

    /** A map whose values are maps with the same keys (such as Windows): a table keyed by "key". */
    private static TabularType inferTable(Map<String, Object> map, String name, OpenType<?> previous)
            throws OpenDataException {
        Set<String> shape = null;
        for (Object row : map.values()) {
            if (!(row instanceof Map<?, ?> r) || r.isEmpty() || r.containsKey("key")) return null;
            if (shape != null && !shape.equals(r.keySet())) return null;
            @SuppressWarnings("unchecked") Set<String> keys = (Set<String>) r.keySet();
            shape = keys;
        }
        CompositeType oldRow = previous instanceof TabularType t ? t.getRowType() : null;
        CompositeType row = rowType(map, shape, name + "Row", oldRow);
        return new TabularType(name, name, row, new String[] {"key"});
    }

    private static Set<String> present(Map<String, Object> map) {
        Set<String> keys = new LinkedHashSet<>();
        for (Map.Entry<String, Object> entry : map.entrySet()) if (entry.getValue() != null) keys.add(entry.getKey());
        return keys;
    }

    /** Table rows keep their null cells: a column's type comes from the first non-null cell. */
    private static CompositeType rowType(Map<String, Object> map, Set<String> shape, String name,
            CompositeType oldRow) throws OpenDataException {
        List<String> keys = new ArrayList<>();
        List<OpenType<?>> types = new ArrayList<>();
        keys.add("key");
        types.add(SimpleType.STRING);
        for (String column : shape) {
            Object sample = null;
            for (Object row : map.values()) {
                sample = map(row).get(column);
                if (sample != null) break;
            }
            OpenType<?> old = oldRow != null && oldRow.containsKey(column) ? oldRow.getType(column) : null;
            keys.add(column);
            types.add(infer(sample, column, old));
        }
        String[] names = keys.toArray(new String[0]);
        return new CompositeType(name, name, names, names, types.toArray(new OpenType<?>[0]));
    }

    /** ``value`` as data of open type ``type``, or NO_FIT. */
    static Object convert(Object value, OpenType<?> type) throws OpenDataException {
        if (value == null) return null;
        if (type == SimpleType.STRING) return value instanceof String ? value : Json.write(value);
        if (type == SimpleType.LONG) return value instanceof Long ? value : NO_FIT;
        if (type == SimpleType.INTEGER) return value instanceof Long l ? (Object) l.intValue() : NO_FIT;
        if (type == SimpleType.DOUBLE) return value instanceof Number n ? (Object) n.doubleValue() : NO_FIT;
        if (type == SimpleType.BOOLEAN) return value instanceof Boolean ? value : NO_FIT;
        if (type instanceof ArrayType<?> array) return convertArray(value, array);
        if (type instanceof TabularType table) return convertTable(value, table);
        if (type instanceof CompositeType composite) return convertComposite(value, composite);
        return NO_FIT;
    }

    private static Object convertArray(Object value, ArrayType<?> type) throws OpenDataException {
        if (!(value instanceof List<?> items)) return NO_FIT;
        OpenType<?> element = type.getElementOpenType();
        Object[] out = switch (element.getClassName()) {
            case "java.lang.Long" -> new Long[items.size()];
            case "java.lang.Double" -> new Double[items.size()];
            case "java.lang.Boolean" -> new Boolean[items.size()];
            default -> new String[items.size()];
        };
        for (int i = 0; i < out.length; i++) {
            Object item = convert(items.get(i), element);
            if (item == NO_FIT) return NO_FIT;
            out[i] = item;
        }
        return out;
    }

    private static Object convertComposite(Object value, CompositeType type) throws OpenDataException {
        if (!(value instanceof Map<?, ?>)) return NO_FIT;
        Map<String, Object> map = map(value);
        if (!present(map).equals(type.keySet())) return NO_FIT;
        Map<String, Object> items = new HashMap<>();
        for (String key : type.keySet()) {
            Object item = convert(map.get(key), type.getType(key));
            if (item == NO_FIT) return NO_FIT;
            items.put(key, item);
        }
        return new CompositeDataSupport(type, items);
    }

    private static Object convertTable(Object value, TabularType type) throws OpenDataException {
        if (!(value instanceof Map<?, ?>)) return NO_FIT;
        TabularDataSupport table = new TabularDataSupport(type);
        for (Map.Entry<String, Object> entry : map(value).entrySet()) {
            if (!(entry.getValue() instanceof Map<?, ?>)) return NO_FIT;
            Map<String, Object> row = new LinkedHashMap<>(map(entry.getValue()));
            row.put("key", entry.getKey());
            CompositeType rowType = type.getRowType();
            if (!row.keySet().equals(rowType.keySet())) return NO_FIT;
            Map<String, Object> cells = new HashMap<>();
            for (String key : rowType.keySet()) {
                Object cell = convert(row.get(key), rowType.getType(key));
                if (cell == NO_FIT) return NO_FIT;
                cells.put(key, cell);
            }
            table.put(new CompositeDataSupport(rowType, cells));
        }
        return table;
    }
}

/** Calls one operation of a remote MBean over JMX and prints the result as JSON. */
final class Invoke {
    static final String JSON_TEXT = "(returned as JSON text)";
    static int run(String[] args) {
        if (args.length < 4) {
            System.err.println("usage: java Bridge.java invoke JMX_URL MBEAN OPERATION [ARG...]");
            return 2;
        }
        Map<String, Object> env = new HashMap<>();
        String user = System.getenv("PUSHGRID_JMX_USERNAME");
        if (user != null) {
            String password = System.getenv("PUSHGRID_JMX_PASSWORD");
            env.put(JMXConnector.CREDENTIALS, new String[] {user, password == null ? "" : password});
        }
        try (JMXConnector connector = JMXConnectorFactory.connect(new JMXServiceURL(args[1]), env)) {
            MBeanServerConnection connection = connector.getMBeanServerConnection();
            ObjectName name = new ObjectName(args[2]);
            MBeanOperationInfo op = operation(connection.getMBeanInfo(name), args[3], args.length - 4);
            String[] signature = new String[op.getSignature().length];
            Object[] params = new Object[signature.length];
            for (int i = 0; i < params.length; i++) {
                signature[i] = op.getSignature()[i].getType();
                params[i] = parameter(args[4 + i], signature[i]);
            }
            Object value = connection.invoke(name, args[3], params, signature);
            Map<String, Object> out = new LinkedHashMap<>();
            if (value instanceof String text && op.getDescription().endsWith(JSON_TEXT)) {
                out.put("value", Json.parse(text));
            } else {
                out.put("value", value instanceof Number || value instanceof Boolean || value == null
                        ? value : String.valueOf(value));
            }
            System.out.println(Json.write(out));
            return 0;
        } catch (Exception e) {
            Throwable cause = e;
            while (cause.getCause() != null) cause = cause.getCause();
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("error", String.valueOf(cause.getMessage()));
            out.put("error_type", cause.getClass().getName());
            System.out.println(Json.write(out));
            return 1;
        }
    }

    private static MBeanOperationInfo operation(MBeanInfo info, String operation, int count)
            throws Exception {
        for (MBeanOperationInfo op : info.getOperations()) {
            if (op.getName().equals(operation) && op.getSignature().length == count) return op;
        }
        throw new NoSuchMethodException("no operation " + operation + " with " + count + " arguments");
    }

    private static Object parameter(String text, String type) {
        return switch (type) {
            case "java.lang.Long", "long" -> Long.valueOf(text);
            case "java.lang.Integer", "int" -> Integer.valueOf(text);
            case "java.lang.Double", "double" -> Double.valueOf(text);
            case "java.lang.Boolean", "boolean" -> Boolean.valueOf(text);
            default -> text;
        };
    }
}

/** Just enough JSON: objects (ordered), arrays, strings, integers (Long), decimals (Double). */
final class Json {
    private final String text;
    private int at;

    private Json(String text) {
        this.text = text;
    }

    static Object parse(String text) throws IOException {
        Json json = new Json(text);
        Object value = json.value();
        json.space();
        if (json.at != text.length()) throw new IOException("trailing text in JSON at " + json.at);
        return value;
    }

    private void space() {
        while (at < text.length() && Character.isWhitespace(text.charAt(at))) at++;
    }

    private Object value() throws IOException {
        space();
        if (at >= text.length()) throw new IOException("unexpected end of JSON");
        char c = text.charAt(at);
        if (c == '{') return object();
        if (c == '[') return array();
        if (c == '"') return string();
        if (text.startsWith("true", at)) { at += 4; return Boolean.TRUE; }
        if (text.startsWith("false", at)) { at += 5; return Boolean.FALSE; }
        if (text.startsWith("null", at)) { at += 4; return null; }
        return number();
    }

    private Map<String, Object> object() throws IOException {
        Map<String, Object> map = new LinkedHashMap<>();
        at++;
        space();
        if (text.charAt(at) == '}') { at++; return map; }
        while (true) {
            space();
            String key = string();
            space();
            expect(':');
            map.put(key, value());
            space();
            if (text.charAt(at) == '}') { at++; return map; }
            expect(',');
        }
    }

    private List<Object> array() throws IOException {
        List<Object> list = new ArrayList<>();
        at++;
        space();
        if (text.charAt(at) == ']') { at++; return list; }
        while (true) {
            list.add(value());
            space();
            if (text.charAt(at) == ']') { at++; return list; }
            expect(',');
        }
    }

    private void expect(char c) throws IOException {
        if (at >= text.length() || text.charAt(at) != c) throw new IOException("expected '" + c + "' at " + at);
        at++;
    }

    private String string() throws IOException {
        expect('"');
        StringBuilder out = new StringBuilder();
        while (true) {
            if (at >= text.length()) throw new IOException("unterminated string");
            char c = text.charAt(at++);
            if (c == '"') return out.toString();
            if (c != '\\') { out.append(c); continue; }
            char e = text.charAt(at++);
            switch (e) {
                case 'n' -> out.append('\n');
                case 't' -> out.append('\t');
                case 'r' -> out.append('\r');
                case 'b' -> out.append('\b');
                case 'f' -> out.append('\f');
                case 'u' -> { out.append((char) Integer.parseInt(text.substring(at, at + 4), 16)); at += 4; }
                default -> out.append(e);
            }
        }
    }

    private Object number() throws IOException {
        int start = at;
        while (at < text.length() && "+-0123456789.eE".indexOf(text.charAt(at)) >= 0) at++;
        String token = text.substring(start, at);
        if (token.isEmpty()) throw new IOException("unexpected character in JSON at " + start);
        try {
            if (token.contains(".") || token.contains("e") || token.contains("E")) return Double.valueOf(token);
            return Long.valueOf(token);
        } catch (NumberFormatException e) {
            return Double.valueOf(token); // integers beyond long
        }
    }

    static String write(Object value) {
        StringBuilder out = new StringBuilder();
        write(value, out);
        return out.toString();
    }

    private static void write(Object value, StringBuilder out) {
        if (value == null) {
            out.append("null");
        } else if (value instanceof Boolean || value instanceof Long || value instanceof Integer) {
            out.append(value);
        } else if (value instanceof Number n) {
            double d = n.doubleValue();
            out.append(Double.isFinite(d) ? String.valueOf(d) : "null");
        } else if (value instanceof Map<?, ?> map) {
            out.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> entry : map.entrySet()) {
                if (!first) out.append(',');
                first = false;
                write(String.valueOf(entry.getKey()), out);
                out.append(':');
                write(entry.getValue(), out);
            }
            out.append('}');
        } else if (value instanceof List<?> list) {
            out.append('[');
            for (int i = 0; i < list.size(); i++) {
                if (i > 0) out.append(',');
                write(list.get(i), out);
            }
            out.append(']');
        } else {
            String s = value.toString();
            out.append('"');
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                switch (c) {
                    case '"' -> out.append("\\\"");
                    case '\\' -> out.append("\\\\");
                    case '\n' -> out.append("\\n");
                    case '\r' -> out.append("\\r");
                    case '\t' -> out.append("\\t");
                    default -> {
                        if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
                        else out.append(c);
                    }
                }
            }
            out.append('"');
        }
    }
}
