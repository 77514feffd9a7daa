//! The r2r transport (cargo feature `ros2`): the robot's own ROS 2 through rcl, for robots with a
//! sourced ROS 2. Raw CDR in (`Node::subscribe_raw`) and out (untyped publishers, `publish_raw`),
//! so the same codecs serve every transport. rcl reads the process's `--ros-args` itself
//! (remappings, `__node`, `__ns`, parameters files) and the environment (ROS_DOMAIN_ID,
//! RMW_IMPLEMENTATION). An untyped topic needs its type's bindings, which r2r generates at build
//! time from the message packages of the sourced ROS 2: every type the node uses is a standard one
//! but `neuroburst_msgs/msg/BurstStats`, which the node does without (see `node::topics`).
//! Tested against a real ROS 2 Jazzy (tests/ros2_rcl.rs); CI also type-checks it through r2r's
//! `doc-only` feature (`cargo check --features ros2-doc-check`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use futures::StreamExt;

use super::{
    AttachmentStatus, Call, CallHandler, Publisher, Qos, Reliability, Sample, SampleHandler, Subscription, TopicSpec, Transport,
    TransportError,
};

fn rerr(e: impl std::fmt::Display) -> TransportError {
    TransportError::Ros2(e.to_string())
}

/// An error of r2r about `topic`; a type r2r has no bindings for names the package to install.
fn topic_err(topic: &TopicSpec, e: r2r::Error) -> TransportError {
    let message = match e {
        r2r::Error::InvalidMessageType { .. } => super::missing_type(&topic.type_name),
        e => e.to_string(),
    };
    TransportError::Topic { topic: topic.name.clone(), message }
}

fn qos(q: &Qos) -> r2r::QosProfile {
    let p = r2r::QosProfile::default().keep_last(q.depth).volatile();
    match q.reliability {
        Reliability::Reliable => p.reliable(),
        Reliability::BestEffort => p.best_effort(),
    }
}

/// A ROS 2 node on rcl (r2r): its subscriptions, publishers and services carry raw CDR; a thread
/// spins the node until the transport is dropped.
pub struct R2rTransport {
    node: Arc<Mutex<r2r::Node>>,
    name: String,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl R2rTransport {
    /// Create the rcl node on ROS domain `domain` and a thread that spins it.
    pub fn open(name: &str, namespace: &str, domain: u32) -> Result<R2rTransport, TransportError> {
        // rcl takes the domain from the environment when its context is created.
        if std::env::var("ROS_DOMAIN_ID").ok().as_deref() != Some(domain.to_string().as_str()) {
            std::env::set_var("ROS_DOMAIN_ID", domain.to_string());
        }
        let ctx = r2r::Context::create().map_err(rerr)?;
        let node = Arc::new(Mutex::new(r2r::Node::create(ctx, name, namespace).map_err(rerr)?));
        let stop = Arc::new(AtomicBool::new(false));
        let (n, s) = (node.clone(), stop.clone());
        let spinner = std::thread::Builder::new()
            .name("r2r-spin".into())
            .spawn(move || {
                while !s.load(Ordering::Relaxed) {
                    n.lock().unwrap_or_else(|p| p.into_inner()).spin_once(Duration::from_millis(5));
                }
            })
            .map_err(rerr)?;
        let fqn = n_fqn(&node);
        Ok(R2rTransport { node, name: format!("{fqn} on domain {domain}"), stop, threads: vec![spinner] })
    }
}

/// The node's fully qualified name as rcl resolved it (after `__node`/`__ns` remappings).
fn n_fqn(node: &Arc<Mutex<r2r::Node>>) -> String {
    node.lock().unwrap_or_else(|p| p.into_inner()).fully_qualified_name().unwrap_or_else(|e| format!("(unknown: {e})"))
}

impl Drop for R2rTransport {
    fn drop(&mut self) {
        // The last messages (the stop commands) are reliable: give DDS the time to deliver them
        // before the publishers go.
        std::thread::sleep(Duration::from_millis(300));
        self.stop.store(true, Ordering::Relaxed);
        if let Some(spinner) = self.threads.drain(..1).next() {
            let _ = spinner.join();
        }
    }
}

impl R2rTransport {
    /// Serve a service of type `T` (r2r has typed services only): each request goes to `handler`
    /// as rcl serializes it, and the answer's CDR bytes back into `T::Response`.
    fn serve_typed<T>(&mut self, service: &TopicSpec, handler: CallHandler) -> Result<(), TransportError>
    where
        T: r2r::WrappedServiceTypeSupport + 'static,
    {
        use r2r::WrappedTypesupport;
        let stream = self
            .node
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .create_service::<T>(&service.name, r2r::QosProfile::services_default())
            .map_err(|e| topic_err(service, e))?;
        let name = service.name.clone();
        let server = std::thread::Builder::new()
            .name(format!("r2r-srv {name}"))
            .spawn(move || {
                futures::executor::block_on(stream.for_each(|call| {
                    let request = match call.message.to_serialized_bytes() {
                        Ok(b) => b,
                        Err(e) => {
                            tracing::warn!("{name}: cannot serialize a request: {e}");
                            return futures::future::ready(());
                        }
                    };
                    let name = name.clone();
                    let reply = move |response: Vec<u8>| {
                        let answered = T::Response::from_serialized_bytes(&response).and_then(|r| call.respond(r));
                        if let Err(e) = answered {
                            tracing::warn!("{name}: cannot send the answer: {e}");
                        }
                    };
                    handler(Call { request, reply: Box::new(reply) });
                    futures::future::ready(())
                }))
            })
            .map_err(rerr)?;
        self.threads.push(server);
        Ok(())
    }
}

struct R2rPublisher(r2r::PublisherUntyped);

impl Publisher for R2rPublisher {
    fn publish(&mut self, cdr: &[u8]) -> Result<(), TransportError> {
        self.0.publish_raw(cdr).map_err(rerr)
    }
}

impl Transport for R2rTransport {
    fn describe(&self) -> String {
        format!("ros2 (r2r, rcl) node {}", self.name)
    }

    fn publisher(&mut self, topic: &TopicSpec) -> Result<Box<dyn Publisher>, TransportError> {
        let p =
            self.node.lock().unwrap_or_else(|p| p.into_inner()).create_publisher_untyped(&topic.name, &topic.type_name, qos(&topic.qos));
        Ok(Box::new(R2rPublisher(p.map_err(|e| topic_err(topic, e))?)))
    }

    fn serve(&mut self, service: &TopicSpec, handler: CallHandler) -> Result<(), TransportError> {
        use r2r::{lifecycle_msgs::srv as lifecycle, rcl_interfaces::srv as params};
        match service.type_name.as_str() {
            "lifecycle_msgs/srv/ChangeState" => self.serve_typed::<lifecycle::ChangeState::Service>(service, handler),
            "lifecycle_msgs/srv/GetState" => self.serve_typed::<lifecycle::GetState::Service>(service, handler),
            "lifecycle_msgs/srv/GetAvailableStates" => self.serve_typed::<lifecycle::GetAvailableStates::Service>(service, handler),
            "lifecycle_msgs/srv/GetAvailableTransitions" => {
                self.serve_typed::<lifecycle::GetAvailableTransitions::Service>(service, handler)
            }
            "rcl_interfaces/srv/ListParameters" => self.serve_typed::<params::ListParameters::Service>(service, handler),
            "rcl_interfaces/srv/GetParameters" => self.serve_typed::<params::GetParameters::Service>(service, handler),
            "rcl_interfaces/srv/SetParameters" => self.serve_typed::<params::SetParameters::Service>(service, handler),
            "rcl_interfaces/srv/SetParametersAtomically" => self.serve_typed::<params::SetParametersAtomically::Service>(service, handler),
            "rcl_interfaces/srv/DescribeParameters" => self.serve_typed::<params::DescribeParameters::Service>(service, handler),
            "rcl_interfaces/srv/GetParameterTypes" => self.serve_typed::<params::GetParameterTypes::Service>(service, handler),
            // (r2r's bindings for its type check without ROS, `doc-only`, have no std_srvs)
            #[cfg(not(feature = "ros2-doc-check"))]
            "std_srvs/srv/Trigger" => self.serve_typed::<r2r::std_srvs::srv::Trigger::Service>(service, handler),
            other => Err(TransportError::Topic { topic: service.name.clone(), message: super::missing_type(other) }),
        }
    }

    /// r2r 0.9 cannot destroy an rcl subscription: a dropped [`Subscription`] stops delivering
    /// its samples, and the rcl subscription goes with the node.
    fn subscribe(&mut self, topic: &TopicSpec, handler: SampleHandler) -> Result<Subscription, TransportError> {
        let stream = self.node.lock().unwrap_or_else(|p| p.into_inner()).subscribe_raw(&topic.name, &topic.type_name, qos(&topic.qos));
        let stream = stream.map_err(|e| topic_err(topic, e))?;
        let name: Arc<str> = topic.name.as_str().into();
        let open = Arc::new(AtomicBool::new(true));
        let delivering = open.clone();
        // The stream ends when the node is dropped; its thread ends with it.
        let reader = std::thread::Builder::new()
            .name(format!("r2r-sub {}", topic.name))
            .spawn(move || {
                futures::executor::block_on(stream.for_each(|payload| {
                    if !delivering.load(Ordering::Relaxed) {
                        return futures::future::ready(());
                    }
                    handler(Sample { topic: name.clone(), payload, attachment: AttachmentStatus::NotExpected, received: Instant::now() });
                    futures::future::ready(())
                }))
            })
            .map_err(rerr)?;
        self.threads.push(reader);
        Ok(Subscription::new(Closes(open)))
    }
}

/// Stops a subscription's deliveries when dropped.
struct Closes(Arc<AtomicBool>);

impl Drop for Closes {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Relaxed);
    }
}
