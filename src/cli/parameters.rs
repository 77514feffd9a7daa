//! The node's parameters over its configuration: every key of `config/neuroburst.yaml` that holds
//! a value ([`crate::config::params`]), the twist decoders' scales and limits, and `genome`.

use std::path::PathBuf;

use crate::config::{params, Config};
use crate::node::services::Parameters;
use crate::node::NodeSections;
use crate::ros::rcl_interfaces::{Parameter, ParameterDescriptor, ParameterValue};

const GENOME: &str = "genome";

pub struct ConfigParameters {
    config: Config,
    genome: Option<PathBuf>,
    resume: bool,
}

impl ConfigParameters {
    pub fn new(config: Config, genome: Option<PathBuf>, resume: bool) -> ConfigParameters {
        ConfigParameters { config, genome, resume }
    }
}

fn string(s: String) -> ParameterValue {
    ParameterValue { r#type: 4, string_value: s, ..Default::default() }
}

impl Parameters for ConfigParameters {
    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = params::params(&self.config).into_iter().map(|p| p.key).chain([GENOME.to_string()]).collect();
        names.sort();
        names
    }

    fn get(&self, name: &str) -> Option<ParameterValue> {
        if name == GENOME {
            return Some(string(self.genome.as_ref().map(|g| g.display().to_string()).unwrap_or_default()));
        }
        params::params(&self.config).iter().find(|p| p.key == name).map(params::value)
    }

    fn describe(&self, name: &str) -> Option<ParameterDescriptor> {
        if name == GENOME {
            return Some(ParameterDescriptor {
                name: GENOME.into(),
                r#type: 4,
                description: "The genome: the project's YAML or a FEAGI JSON genome".into(),
                additional_constraints: params::FILE_CONSTRAINT.into(),
                read_only: true,
                ..Default::default()
            });
        }
        params::params(&self.config).iter().find(|p| p.key == name).map(params::descriptor)
    }

    fn set(&mut self, changes: &[Parameter], configured: bool) -> Result<(), String> {
        let (mut config, mut genome) = (self.config.clone(), self.genome.clone());
        for p in changes {
            if p.name == GENOME {
                if configured {
                    return Err("genome is read at configure: set it while the node is unconfigured".into());
                }
                if p.value.r#type != 4 {
                    return Err(format!("genome takes a parameter of type 4 (a file name), not {}", p.value.r#type));
                }
                genome = Some(params::file_inside(&self.config.node.parameter_files_dir, GENOME, &p.value.string_value)?);
            } else {
                config = params::set(&config, &p.name, &p.value, configured)?;
            }
        }
        if config.log.level != self.config.log.level {
            super::set_log_level(&config.log.level).map_err(|e| format!("log.level: {e}"))?;
        }
        (self.config, self.genome) = (config, genome);
        Ok(())
    }

    fn sections(&self) -> NodeSections {
        self.config.node_sections()
    }

    fn genome(&self) -> Option<PathBuf> {
        self.genome.clone()
    }

    fn resume(&self) -> bool {
        self.resume
    }
}
