//! The Kubernetes files under deploy/kubernetes: they parse as YAML and pass yamllint, the
//! Job has the shape docs/several-generators.md promises (an Indexed Job of N generators, pod
//! 0 their coordinator reached through a headless Service, no shared volume), and the
//! command lines their shells produce are ones reqlife accepts: each generator's argv, with
//! JOB_COMPLETION_INDEX 0..N-1 and the ConfigMap's values, goes through reqlife's own parser
//! and plan builder. The Dockerfile builds the binary and runs it as a non-root user.

use crate::common::missing;

use clap::Parser;
use std::path::{Path, PathBuf};
use std::process::Command;
use yaml_rust2::{Yaml, YamlLoader};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/kubernetes")
}

fn docs(file: &str) -> Vec<Yaml> {
    let text = std::fs::read_to_string(dir().join(file)).unwrap();
    YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn one(file: &str, kind: &str) -> Yaml {
    docs(file)
        .into_iter()
        .find(|d| d["kind"].as_str() == Some(kind))
        .unwrap_or_else(|| panic!("no {kind} in {file}"))
}

fn s(y: &Yaml) -> &str {
    y.as_str().unwrap_or_else(|| panic!("not a string: {y:?}"))
}

#[test]
fn manifests_lint_clean() {
    let lint = ["/usr/local/bin/yamllint", "/usr/bin/yamllint"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .map(str::to_string)
        .or_else(|| {
            Command::new("yamllint")
                .arg("--version")
                .output()
                .ok()
                .map(|_| "yamllint".to_string())
        });
    let Some(lint) = lint else {
        missing("yamllint", "pip install yamllint");
        return;
    };
    let files: Vec<PathBuf> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    assert!(files.len() >= 4, "{files:?}");
    let out = Command::new(lint)
        .arg("-c")
        .arg(dir().join(".yamllint"))
        .args(&files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_jobs_have_the_promised_shape() {
    let load = one("load-job.yaml", "Job");
    let spec = &load["spec"];
    assert_eq!(s(&spec["completionMode"]), "Indexed");
    let n = spec["completions"].as_i64().unwrap();
    assert_eq!(
        spec["parallelism"].as_i64(),
        Some(n),
        "every segment at once"
    );
    let pod = &spec["template"]["spec"];
    assert_eq!(s(&pod["restartPolicy"]), "Never");
    let c = &pod["containers"][0];
    let env = c["env"].as_vec().unwrap();
    let segments = env
        .iter()
        .find(|e| s(&e["name"]) == "SEGMENTS")
        .map(|e| s(&e["value"]).parse::<i64>().unwrap());
    assert_eq!(segments, Some(n), "SEGMENTS = completions");
    // Pod 0 is reached through the headless Service the pods' subdomain names, on the port
    // the coordinator's address gives; /results is each pod's own: no volume to share.
    let svc = docs("load-job.yaml")
        .into_iter()
        .find(|d| d["kind"].as_str() == Some("Service"))
        .expect("the coordinator's Service");
    assert_eq!(s(&svc["spec"]["clusterIP"]), "None", "headless");
    assert_eq!(s(&pod["subdomain"]), s(&svc["metadata"]["name"]));
    let labels = &spec["template"]["metadata"]["labels"];
    for (k, v) in svc["spec"]["selector"].as_hash().unwrap() {
        assert_eq!(labels[s(k)].as_str(), v.as_str());
    }
    let run = one("run.yaml", "ConfigMap");
    let coordinator = s(&run["data"]["coordinator"]);
    let pod0 = format!(
        "{}-0.{}:",
        s(&load["metadata"]["name"]),
        s(&svc["metadata"]["name"])
    );
    assert!(coordinator.starts_with(&pod0), "{coordinator}");
    let port = svc["spec"]["ports"][0]["port"].as_i64().unwrap();
    assert!(coordinator.ends_with(&format!(":{port}")), "{coordinator}");
    assert!(!pod["volumes"][0]["emptyDir"].is_badvalue());
    let mount = &c["volumeMounts"][0];
    assert_eq!(s(&mount["mountPath"]), "/results");
    assert_eq!(s(&mount["name"]), s(&pod["volumes"][0]["name"]));
    // The Prometheus Operator's PodMonitor selects the generators and scrapes their metrics
    // port.
    let monitor = one("podmonitor.yaml", "PodMonitor");
    for (k, v) in monitor["spec"]["selector"]["matchLabels"]
        .as_hash()
        .unwrap()
    {
        assert_eq!(labels[s(k)].as_str(), v.as_str());
    }
    let port = s(&monitor["spec"]["podMetricsEndpoints"][0]["port"]);
    assert!(
        c["ports"]
            .as_vec()
            .unwrap()
            .iter()
            .any(|p| s(&p["name"]) == port),
        "{port}"
    );
    // Every value the generators read from the ConfigMap is in it.
    for e in env.iter().filter(|e| !e["valueFrom"].is_badvalue()) {
        let r = &e["valueFrom"]["configMapKeyRef"];
        assert_eq!(s(&r["name"]), s(&run["metadata"]["name"]));
        assert!(
            run["data"][s(&r["key"])].as_str().is_some(),
            "{:?}",
            r["key"]
        );
    }
    // The demo target's Service selects its Deployment.
    let svc = one("target.yaml", "Service");
    let deploy = one("target.yaml", "Deployment");
    let labels = &deploy["spec"]["template"]["metadata"]["labels"];
    for (k, v) in svc["spec"]["selector"].as_hash().unwrap() {
        assert_eq!(labels[s(k)].as_str(), v.as_str());
    }
}

/// What a container's `sh -c` line runs: the line is run by the real shell with the pod's
/// environment and a stand-in `reqlife` on the PATH that prints its arguments, one per line.
fn argv_of(line: &str, env: &[(String, String)]) -> Vec<String> {
    let bin = tempfile::tempdir().unwrap();
    let fake = bin.path().join("reqlife");
    std::fs::write(
        &fake,
        "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = Command::new("/bin/sh")
        .arg("-c")
        .arg(line)
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", bin.path().display()))
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .output()
        .unwrap();
    let mut argv = vec!["reqlife".to_string()];
    argv.extend(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string),
    );
    argv
}

#[test]
fn the_generators_command_lines_parse_and_cover_every_segment() {
    let load = one("load-job.yaml", "Job");
    let n = load["spec"]["completions"].as_i64().unwrap();
    let c = &load["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(s(&c["command"][0]), "/bin/sh");
    let line = s(&c["args"][0]);
    let run = one("run.yaml", "ConfigMap");
    let mut env: Vec<(String, String)> = Vec::new();
    for e in c["env"].as_vec().unwrap() {
        let value = match e["value"].as_str() {
            Some(v) => v.to_string(),
            None => s(&run["data"][s(&e["valueFrom"]["configMapKeyRef"]["key"])]).to_string(),
        };
        env.push((s(&e["name"]).to_string(), value));
    }
    let mut segments = Vec::new();
    for index in 0..n {
        let mut env = env.clone();
        env.push(("JOB_COMPLETION_INDEX".into(), index.to_string()));
        let argv = argv_of(line, &env);
        let cli =
            reqlife::cli::Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
        let reqlife::cli::Command::Run(mut args) = cli.command else {
            panic!("not a run: {argv:?}")
        };
        // Pod 0 writes the merged record; the others their own.
        let out = match index {
            0 => "/results/all.json".to_string(),
            k => format!("/results/segment-{}.json", k + 1),
        };
        assert!(argv.contains(&out), "{argv:?}");
        // The cluster's Service name does not resolve here, nor is /results mounted: the plan
        // is built for loopback and a folder of this machine.
        args.files.output = Some(std::env::temp_dir().join("segment.json"));
        let url = args.url.take().unwrap();
        assert_eq!(url, s(&run["data"]["target-url"]));
        let plan = reqlife::cli::plan::build(&args, "http://127.0.0.1:8080/")
            .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
        assert_eq!(plan.segment.count, n as u64);
        segments.push(plan.segment.index);
        assert_eq!(
            args.length.coordinator.as_deref(),
            run["data"]["coordinator"].as_str(),
            "a common start, and the merge at pod 0"
        );
        assert_eq!(
            args.view.thresholds.len(),
            1,
            "the threshold the Job is decided by"
        );
        // Prometheus's scrape annotations name the port each generator serves its metrics on.
        let notes = &load["spec"]["template"]["metadata"]["annotations"];
        assert_eq!(s(&notes["prometheus.io/scrape"]), "true");
        assert_eq!(s(&notes["prometheus.io/path"]), "/metrics");
        let metrics = args.watch.metrics_addr.expect("--metrics-addr");
        assert_eq!(s(&notes["prometheus.io/port"]), metrics.port().to_string());
        assert!(
            !args.watch.metrics_linger.is_zero(),
            "a last scrape after the end"
        );
    }
    assert_eq!(
        segments,
        (0..n as u64).collect::<Vec<_>>(),
        "each segment once"
    );
}

#[test]
fn the_image_builds_the_binary_and_runs_it_as_a_user() {
    let text = std::fs::read_to_string(dir().join("Dockerfile")).unwrap();
    let froms: Vec<&str> = text.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert_eq!(froms.len(), 2, "a build stage and a run stage");
    assert!(froms[0].contains("rust:") && froms[0].ends_with(" AS build"));
    assert!(froms[1].contains("-slim"));
    assert!(text.contains("cargo build --release --locked --bin reqlife"));
    assert!(text.contains("COPY --from=build /src/target/release/reqlife /usr/local/bin/reqlife"));
    let user = text.lines().find(|l| l.starts_with("USER ")).unwrap();
    assert_ne!(user.trim(), "USER root");
    assert!(text
        .lines()
        .last()
        .unwrap()
        .contains(r#"ENTRYPOINT ["reqlife"]"#));
}
