package org.elasticsearch.node;

import java.util.Collection;
import java.util.List;

import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.env.Environment;
import org.elasticsearch.plugins.ClasspathPluginsService;
import org.elasticsearch.plugins.Plugin;
import org.elasticsearch.plugins.PluginsService;

/**
 * Builds a {@link Node} whose plugins are classpath classes. {@code NodeConstruction},
 * {@code NodeServiceProvider} and {@code Node(NodeConstruction)} are package-private, hence this
 * package; nothing else of the server is replaced.
 */
public final class ClasspathNodes {

    private ClasspathNodes() {
    }

    public static Node create(Environment environment, Collection<Class<? extends Plugin>> pluginClasses) {
        List<Class<? extends Plugin>> plugins = List.copyOf(pluginClasses);
        NodeServiceProvider services = new NodeServiceProvider() {
            @Override
            PluginsService newPluginService(Environment env, Settings settings) {
                return new ClasspathPluginsService(settings, env, plugins);
            }
        };
        // true: index settings private to the server stay forbidden to clients, as in a real node
        return new Node(NodeConstruction.prepareConstruction(environment, services, true));
    }
}
