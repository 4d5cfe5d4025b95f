package pglimits;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.opensearch.Build;
import org.opensearch.Version;
import org.opensearch.analysis.common.CommonAnalysisPlugin;
import org.opensearch.common.logging.LogConfigurator;
import org.opensearch.common.settings.Settings;
import org.opensearch.env.Environment;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.plugins.Plugin;
import org.opensearch.transport.Netty4Plugin;

/**
 * One OpenSearch node started from the classpath, the way the distribution's Bootstrap would,
 * minus the parts that need the tarball (modules/ dir, bundled JDK, security policy files).
 *
 * <p>Usage: {@code java [jvm flags] -cp target/opensearch-launcher.jar:target/lib/* pglimits.OpenSearchLauncher
 * HOME HTTP_PORT [key=value ...]}. HOME holds config/, data/, logs/ and the empty modules/ and
 * plugins/; each key=value is a node setting (like the distribution's -E). HTTP_PORT may also come
 * from -Dpglimits.http.port. SIGTERM closes the node (shutdown hook) and the JVM exits 0.
 */
public final class OpenSearchLauncher {

    /** The line the Python side waits for (after it, cluster health is polled over HTTP). */
    static final String STARTED = "PGLIMITS OPENSEARCH STARTED";

    static final String FAILED = "PGLIMITS OPENSEARCH FAILED:";

    static final String NODE_NAME = "pglimits-opensearch";

    // Console only: the Python side sends stdout to HOME/logs/opensearch.log and tails it on failure.
    private static final String LOG4J2_PROPERTIES = String.join("\n",
        "status = error",
        "appender.console.type = Console",
        "appender.console.name = console",
        "appender.console.layout.type = PatternLayout",
        "appender.console.layout.pattern = [%d{ISO8601}][%-5p][%-25c{1.}] [%node_name]%marker %m%n",
        "rootLogger.level = info",
        "rootLogger.appenderRef.console.ref = console",
        "");

    /** Node's constructor with classpath plugins is protected: this subclass is the only way in. */
    static final class ClasspathNode extends Node {
        ClasspathNode(Environment environment, Collection<Class<? extends Plugin>> plugins) {
            super(environment, plugins, true);
        }
    }

    private static volatile Node node;

    private OpenSearchLauncher() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: OpenSearchLauncher HOME [HTTP_PORT] [setting=value ...]");
            System.exit(64);
        }
        Path home = Paths.get(args[0]).toAbsolutePath();
        String port = args.length > 1 ? args[1] : System.getProperty("pglimits.http.port", "9200");
        try {
            Environment environment = prepare(home, port, List.of(args).subList(Math.min(2, args.length), args.length));
            Runtime.getRuntime().addShutdownHook(new Thread(OpenSearchLauncher::closeNode, "pglimits-shutdown"));
            node = new ClasspathNode(environment, List.of(Netty4Plugin.class, CommonAnalysisPlugin.class));
            node.start();
        } catch (Throwable failure) {
            failure.printStackTrace();
            // last, on one line: the Python side quotes it as the reason the node did not start
            System.err.println(FAILED + " " + rootCause(failure));
            System.err.flush();
            System.exit(1);
        }
        System.out.println(STARTED + " version=" + Build.CURRENT.getQualifiedVersion()
            + " lucene=" + Version.CURRENT.luceneVersion + " http=127.0.0.1:" + port + " pid=" + ProcessHandle.current().pid());
        System.out.flush();
        new CountDownLatch(1).await(); // node threads do the work; the JVM ends through the shutdown hook
    }

    private static Environment prepare(Path home, String port, List<String> extra) throws Exception {
        Path config = home.resolve("config");
        for (Path dir : List.of(config, home.resolve("data"), home.resolve("logs"), home.resolve("modules"),
                                home.resolve("plugins"))) {
            Files.createDirectories(dir);
        }
        Path log4j = config.resolve("log4j2.properties");
        if (!Files.exists(log4j)) {
            Files.writeString(log4j, LOG4J2_PROPERTIES, StandardCharsets.UTF_8);
        }
        Settings.Builder settings = Settings.builder()
            .put("path.home", home.toString())
            .put("path.data", home.resolve("data").toString())
            .put("path.logs", home.resolve("logs").toString())
            .put("cluster.name", "pglimits")
            .put("node.name", NODE_NAME)
            .put("discovery.type", "single-node")
            .put("network.host", "127.0.0.1")
            .put("http.port", port)
            // the study measures disk use itself; watermarks would flip indices read-only mid-run
            .put("cluster.routing.allocation.disk.threshold_enabled", false);
        for (String setting : extra) {
            int eq = setting.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("setting must be key=value: " + setting);
            }
            settings.put(setting.substring(0, eq), setting.substring(eq + 1));
        }
        Environment environment = InternalSettingsPreparer.prepareEnvironment(
            settings.build(), Map.of(), config, () -> NODE_NAME);
        LogConfigurator.registerErrorListener();
        LogConfigurator.setNodeName(NODE_NAME);
        LogConfigurator.configure(environment);
        return environment;
    }

    private static String rootCause(Throwable failure) {
        Throwable cause = failure;
        while (cause.getCause() != null && cause.getCause() != cause) {
            cause = cause.getCause();
        }
        String message = cause == failure ? failure.toString() : failure + " (cause: " + cause + ")";
        return message.replace('\n', ' ');
    }

    private static void closeNode() {
        Node running = node;
        if (running == null) {
            return;
        }
        try {
            running.close();
            if (!running.awaitClose(30, TimeUnit.SECONDS)) {
                System.err.println("PGLIMITS OPENSEARCH: node did not close within 30s");
            }
            System.out.println("PGLIMITS OPENSEARCH STOPPED");
            System.out.flush();
        } catch (IOException | InterruptedException | RuntimeException failure) {
            System.err.println("PGLIMITS OPENSEARCH: error while closing: " + failure);
        }
    }
}
