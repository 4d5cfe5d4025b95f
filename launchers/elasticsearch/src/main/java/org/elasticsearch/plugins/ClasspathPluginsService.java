package org.elasticsearch.plugins;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;

import org.elasticsearch.Build;
import org.elasticsearch.action.admin.cluster.node.info.PluginsAndModules;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.env.Environment;
import org.elasticsearch.jdk.ModuleQualifiedExportsService;

/**
 * PGLimits' own plugins service: the node's plugins are classes already on the JVM classpath
 * (the netty4 transport and our root handler), not bundles unpacked under modules/ and plugins/.
 *
 * <p>It lives in {@code org.elasticsearch.plugins} because {@code LoadedPlugin} and
 * {@code loadPlugin} are package-private; on the classpath (no module layer) that is allowed.
 */
public final class ClasspathPluginsService extends PluginsService {

    private final List<LoadedPlugin> loaded;

    private final PluginsAndModules info;

    public ClasspathPluginsService(Settings settings, Environment environment,
                                   Collection<Class<? extends Plugin>> pluginClasses) {
        // null directories: nothing is read from modules/ or plugins/
        super(settings, environment.configFile(), null, null);
        List<LoadedPlugin> plugins = new ArrayList<>();
        List<PluginRuntimeInfo> infos = new ArrayList<>();
        for (Class<? extends Plugin> pluginClass : pluginClasses) {
            PluginDescriptor descriptor = new PluginDescriptor(
                pluginClass.getSimpleName(),               // name, as _nodes and _cat/plugins show it
                "classpath plugin of the PGLimits launcher", // description
                Build.current().version(),                 // plugin version = the server's
                Build.current().version(),                 // elasticsearch version it was built for
                Integer.toString(Runtime.version().feature()),
                pluginClass.getName(),                     // classname
                null,                                      // no module name: classpath, unnamed module
                List.of(),                                 // extends nothing
                false, false, false, false);               // native controller, licensed, modular, stable
            plugins.add(new LoadedPlugin(descriptor, loadPlugin(pluginClass, settings, environment.configFile())));
            infos.add(new PluginRuntimeInfo(descriptor));
        }
        loadExtensions(plugins);
        this.loaded = List.copyOf(plugins);
        this.info = new PluginsAndModules(infos, List.of());
    }

    @Override
    protected List<LoadedPlugin> plugins() {
        return loaded;
    }

    @Override
    public PluginsAndModules info() {
        return info;
    }

    /**
     * The server module's qualified exports only exist when it runs as a named module; on the
     * classpath {@code Module.getDescriptor()} is null and the base class would fail on it.
     */
    @Override
    protected void addServerExportsService(Map<String, List<ModuleQualifiedExportsService>> qualifiedExports) {
    }

    /**
     * Service providers come from plugin bundles' own class loaders; every class here shares the
     * application class loader, where a scan would find every jar's providers once per plugin.
     * None of the plugins loaded here provides one, so there is nothing to find.
     */
    @Override
    public <T> List<? extends T> loadServiceProviders(Class<T> service) {
        return List.of();
    }
}
