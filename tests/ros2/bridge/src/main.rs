//! `neuroburst-ros2dds-bridge -c CONFIG.json5`: what `zenoh-bridge-ros2dds -c CONFIG.json5` runs (the
//! `ros2dds` plugin, Cyclone DDS inside, in a Zenoh runtime), built from the plugin on crates.io
//! with the Zenoh version of the node, so the tests run the shipped bridge configuration on real
//! DDS without the upstream binary.

use zenoh::internal::plugins::PluginsManager;
use zenoh::internal::runtime::RuntimeBuilder;
use zenoh::Config;

#[tokio::main]
async fn main() {
    zenoh::init_log_from_env_or("z=info");
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [flag, path] = args.as_slice() else { fail("usage: neuroburst-ros2dds-bridge -c CONFIG.json5") };
    if flag != "-c" {
        fail("usage: neuroburst-ros2dds-bridge -c CONFIG.json5");
    }
    let mut config = Config::from_file(path).unwrap_or_else(|e| fail(&format!("{path}: {e}")));
    // as the upstream bridge: timestamps (publication caches of transient-local topics), the
    // admin space, and static plugins
    for (key, value) in [("timestamping/enabled", "true"), ("adminspace/enabled", "true"), ("plugins_loading/enabled", "true")] {
        config.insert_json5(key, value).unwrap_or_else(|e| fail(&format!("{key}: {e}")));
    }
    let mut plugins = PluginsManager::static_plugins_only();
    plugins.declare_static_plugin::<zenoh_plugin_ros2dds::ROS2Plugin, &str>("ros2dds", true);
    let mut runtime = RuntimeBuilder::new(config).plugins_manager(plugins).build().await.unwrap_or_else(|e| fail(&format!("{e}")));
    if let Err(e) = runtime.start().await {
        fail(&format!("cannot start the Zenoh runtime: {e}"));
    }
    eprintln!("bridge up");
    std::future::pending::<()>().await;
}

fn fail(message: &str) -> ! {
    eprintln!("neuroburst-ros2dds-bridge: {message}");
    std::process::exit(2)
}
