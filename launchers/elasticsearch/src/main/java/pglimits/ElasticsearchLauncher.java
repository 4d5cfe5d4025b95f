package pglimits;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.elasticsearch.Build;
import org.elasticsearch.common.logging.LogConfigurator;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.env.Environment;
import org.elasticsearch.index.IndexVersion;
import org.elasticsearch.node.ClasspathNodes;
import org.elasticsearch.node.InternalSettingsPreparer;
import org.elasticsearch.node.Node;
import org.elasticsearch.transport.netty4.Netty4Plugin;

/**
 * One Elasticsearch 8 node started from the classpath: the server jar, the netty4 transport and
 * {@link RootInfoPlugin}; no x-pack and none of the distribution's other modules. It replaces the
 * distribution's launcher and Bootstrap (no security manager, no bootstrap checks: the node binds
 * 127.0.0.1 only, where the distribution too turns them into warnings).
 *
 * <p>Usage: {@code java [jvm flags] -cp target/elasticsearch-launcher.jar:target/lib/* pglimits.ElasticsearchLauncher
 * HOME HTTP_PORT [key=value ...]}. HOME holds config/, data/ and logs/; each key=value is a node
 * setting (like the distribution's -E). SIGTERM closes the node (shutdown hook).
 */
public final class ElasticsearchLauncher {

    /** The line the Python side waits for (after it, cluster health is polled over HTTP). */
    static final String STARTED = "PGLIMITS ELASTICSEARCH STARTED";

    static final String FAILED = "PGLIMITS ELASTICSEARCH FAILED:";

    static final String NODE_NAME = "pglimits-elasticsearch";

    // Console only: the Python side sends stdout to HOME/logs/elasticsearch.log and tails it on failure.
    private static final String LOG4J2_PROPERTIES = String.join("\n",
        "status = error",
        "appender.console.type = Console",
        "appender.console.name = console",
        "appender.console.layout.type = PatternLayout",
        "appender.console.layout.pattern = [%d{ISO8601}][%-5p][%-25c{1.}] [%node_name]%marker %m%n",
        "rootLogger.level = info",
        "rootLogger.appenderRef.console.ref = console",
        "");

    private static volatile Node node;

    private ElasticsearchLauncher() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: ElasticsearchLauncher HOME HTTP_PORT [setting=value ...]");
            System.exit(64);
        }
        Path home = Paths.get(args[0]).toAbsolutePath();
        String port = args[1];
        try {
            Environment environment = prepare(home, port, List.of(args).subList(2, args.length));
            Runtime.getRuntime().addShutdownHook(new Thread(ElasticsearchLauncher::closeNode, "pglimits-shutdown"));
            node = ClasspathNodes.create(environment, List.of(Netty4Plugin.class, RootInfoPlugin.class));
            node.start();
        } catch (Throwable failure) {
            failure.printStackTrace();
            // last, on one line: the Python side quotes it as the reason the node did not start
            System.err.println(FAILED + " " + rootCause(failure));
            System.err.flush();
            Runtime.getRuntime().halt(1); // no shutdown hook: a half-built node has nothing to flush
        }
        Build build = Build.current();
        System.out.println(STARTED + " version=" + build.qualifiedVersion() + " build=" + build.hash()
            + " lucene=" + IndexVersion.current().luceneVersion() + " http=127.0.0.1:" + port
            + " pid=" + ProcessHandle.current().pid());
        System.out.flush();
        new CountDownLatch(1).await(); // node threads do the work; the JVM ends through the shutdown hook
    }

    private static Environment prepare(Path home, String port, List<String> extra) throws Exception {
        Path config = home.resolve("config");
        for (Path dir : List.of(config, home.resolve("data"), home.resolve("logs"), home.resolve("plugins"))) {
            Files.createDirectories(dir);
        }
        Path log4j = config.resolve("log4j2.properties");
        if (!Files.exists(log4j)) {
            Files.writeString(log4j, LOG4J2_PROPERTIES, StandardCharsets.UTF_8);
        }
        LogConfigurator.registerErrorListener();
        LogConfigurator.configureESLogging();
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
        LogConfigurator.setNodeName(NODE_NAME);
        LogConfigurator.configure(environment, true);
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
            running.prepareForClose();
            running.close();
            if (!running.awaitClose(30, TimeUnit.SECONDS)) {
                System.err.println("PGLIMITS ELASTICSEARCH: node did not close within 30s");
            }
            System.out.println("PGLIMITS ELASTICSEARCH STOPPED");
            System.out.flush();
        } catch (IOException | InterruptedException | RuntimeException failure) {
            System.err.println("PGLIMITS ELASTICSEARCH: error while closing: " + failure);
        }
    }
}
