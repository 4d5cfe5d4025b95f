package pglimits;

import java.util.Collection;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;
import java.util.function.Supplier;

import org.elasticsearch.Build;
import org.elasticsearch.client.internal.node.NodeClient;
import org.elasticsearch.cluster.ClusterState;
import org.elasticsearch.cluster.metadata.IndexNameExpressionResolver;
import org.elasticsearch.cluster.node.DiscoveryNodes;
import org.elasticsearch.cluster.service.ClusterService;
import org.elasticsearch.common.io.stream.NamedWriteableRegistry;
import org.elasticsearch.common.settings.ClusterSettings;
import org.elasticsearch.common.settings.IndexScopedSettings;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.common.settings.SettingsFilter;
import org.elasticsearch.features.NodeFeature;
import org.elasticsearch.index.IndexVersion;
import org.elasticsearch.plugins.ActionPlugin;
import org.elasticsearch.plugins.Plugin;
import org.elasticsearch.rest.BaseRestHandler;
import org.elasticsearch.rest.RestController;
import org.elasticsearch.rest.RestHandler;
import org.elasticsearch.rest.RestRequest;
import org.elasticsearch.rest.RestResponse;
import org.elasticsearch.rest.RestStatus;
import org.elasticsearch.xcontent.XContentBuilder;

/**
 * {@code GET /} and {@code HEAD /}: the node's name, cluster and build, in the shape clients
 * expect (elasticsearch-py's {@code info()}). The distribution answers these through its rest-root
 * module, which Maven Central does not serve; without this plugin the root answers 405.
 * Every value is the running server's own: version and commit from the server jar's manifest
 * ({@link Build#current()}), Lucene from {@link IndexVersion#current()}.
 */
public final class RootInfoPlugin extends Plugin implements ActionPlugin {

    private final AtomicReference<ClusterService> clusterService = new AtomicReference<>();

    @Override
    public Collection<?> createComponents(PluginServices services) {
        clusterService.set(services.clusterService());
        return List.of();
    }

    @Override
    public List<RestHandler> getRestHandlers(Settings settings, NamedWriteableRegistry namedWriteableRegistry,
                                             RestController restController, ClusterSettings clusterSettings,
                                             IndexScopedSettings indexScopedSettings, SettingsFilter settingsFilter,
                                             IndexNameExpressionResolver indexNameExpressionResolver,
                                             Supplier<DiscoveryNodes> nodesInCluster,
                                             Predicate<NodeFeature> clusterSupportsFeature) {
        return List.of(new RootHandler(clusterService::get));
    }

    static final class RootHandler extends BaseRestHandler {

        private final Supplier<ClusterService> clusterService;

        RootHandler(Supplier<ClusterService> clusterService) {
            this.clusterService = clusterService;
        }

        @Override
        public String getName() {
            return "pglimits_root_info";
        }

        @Override
        public List<Route> routes() {
            return List.of(new Route(RestRequest.Method.GET, "/"), new Route(RestRequest.Method.HEAD, "/"));
        }

        @Override
        protected RestChannelConsumer prepareRequest(RestRequest request, NodeClient client) {
            boolean pretty = request.hasParam("pretty") == false; // pretty unless ?pretty=false, like the real root
            return channel -> {
                XContentBuilder body = channel.newBuilder();
                if (pretty) {
                    body.prettyPrint();
                }
                writeRoot(body, clusterService.get());
                channel.sendResponse(new RestResponse(RestStatus.OK, body));
            };
        }

        static void writeRoot(XContentBuilder body, ClusterService clusters) throws java.io.IOException {
            Build build = Build.current();
            ClusterState state = clusters.state();
            body.startObject()
                .field("name", clusters.getNodeName())
                .field("cluster_name", clusters.getClusterName().value())
                .field("cluster_uuid", state.metadata().clusterUUID())
                .startObject("version")
                .field("number", build.qualifiedVersion())
                .field("build_flavor", build.flavor())
                .field("build_type", build.type().displayName())
                .field("build_hash", build.hash())
                .field("build_date", build.date())
                .field("build_snapshot", build.isSnapshot())
                .field("lucene_version", IndexVersion.current().luceneVersion().toString())
                .field("minimum_wire_compatibility_version", build.minWireCompatVersion())
                .field("minimum_index_compatibility_version", build.minIndexCompatVersion())
                .endObject()
                .field("tagline", "You Know, for Search")
                .endObject();
        }
    }
}
