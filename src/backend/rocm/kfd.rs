//! A GCD's architecture (`gfx90a` on an MI250X) from the kernel driver's topology, found by
//! PCI address. HIP gives the architecture only in `hipDeviceProp_t.gcnArchName`, whose
//! struct the backend does not read (ROCm 6 changed its layout, see [`super::hip`]); the
//! amdgpu driver's KFD topology is what ROCm's own runtime (ROCr) reads it from:
//! `/sys/class/kfd/kfd/topology/nodes/<n>/properties`, one `name value` per line, with
//! `gfx_target_version` (major·10000 + minor·100 + stepping, 0 for CPU nodes), `domain` and
//! `location_id` (bus·256 + device·8 + function). Matching by PCI address, not by node or HIP
//! ordinal, keeps it right under ROCR_VISIBLE_DEVICES, which renumbers HIP's devices only.

use std::path::Path;

/// Where the amdgpu driver publishes its topology.
pub(super) const TOPOLOGY: &str = "/sys/class/kfd/kfd/topology/nodes";

/// A PCI address `domain:bus:device.function` (hex), as `hipDeviceGetPCIBusId` writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Bdf {
    pub domain: u32,
    pub bus: u32,
    pub device: u32,
    pub function: u32,
}

impl Bdf {
    /// Parses `0000:c1:00.0`; `None` for anything else.
    pub(super) fn parse(s: &str) -> Option<Bdf> {
        let (domain, rest) = s.trim().split_once(':')?;
        let (bus, rest) = rest.split_once(':')?;
        let (device, function) = rest.split_once('.')?;
        let hex = |x: &str| u32::from_str_radix(x, 16).ok();
        Some(Bdf {
            domain: hex(domain)?,
            bus: hex(bus)?,
            device: hex(device)?,
            function: hex(function)?,
        })
    }

    /// KFD's `location_id` of this address.
    fn location_id(&self) -> u32 {
        (self.bus << 8) | (self.device << 3) | self.function
    }
}

/// `gfx90a` from `gfx_target_version` 90010 (the stepping is one hex digit, as LLVM names
/// targets: 90010 → gfx90a, 90402 → gfx942, 110000 → gfx1100); `None` for 0 (a CPU node).
pub(super) fn gfx_name(target_version: u64) -> Option<String> {
    if target_version == 0 {
        return None;
    }
    let (major, minor, stepping) = (
        target_version / 10_000,
        (target_version / 100) % 100,
        target_version % 100,
    );
    Some(format!("gfx{major}{minor:x}{stepping:x}"))
}

/// The architecture of the GPU at `bdf` under `root` (a KFD topology directory), or `None`
/// where no node has that address (no amdgpu driver, a stand-in's made-up address).
pub(super) fn architecture(root: &Path, bdf: &Bdf) -> Option<String> {
    let entries = std::fs::read_dir(root).ok()?;
    for entry in entries.flatten() {
        let Ok(text) = std::fs::read_to_string(entry.path().join("properties")) else {
            continue;
        };
        let field = |name: &str| {
            text.lines().find_map(|l| {
                let (k, v) = l.split_once(' ')?;
                (k == name).then(|| v.trim().parse::<u64>().ok()).flatten()
            })
        };
        if field("domain") == Some(u64::from(bdf.domain))
            && field("location_id") == Some(u64::from(bdf.location_id()))
        {
            return field("gfx_target_version").and_then(gfx_name);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_versions_name_llvm_targets() {
        assert_eq!(gfx_name(90010).as_deref(), Some("gfx90a"));
        assert_eq!(gfx_name(90402).as_deref(), Some("gfx942"));
        assert_eq!(gfx_name(90008).as_deref(), Some("gfx908"));
        assert_eq!(gfx_name(110000).as_deref(), Some("gfx1100"));
        assert_eq!(gfx_name(0), None);
    }

    #[test]
    fn addresses_parse_as_hip_writes_them() {
        assert_eq!(
            Bdf::parse("0000:c1:00.0"),
            Some(Bdf {
                domain: 0,
                bus: 0xc1,
                device: 0,
                function: 0
            })
        );
        assert_eq!(Bdf::parse("0000:c1:00.0").unwrap().location_id(), 0xc100);
        assert_eq!(Bdf::parse("fffe:5b:03.1").unwrap().location_id(), 0x5b19);
        assert_eq!(Bdf::parse("c1:00.0"), None);
        assert_eq!(Bdf::parse("0000:zz:00.0"), None);
    }

    /// An MI250X's two GCDs (LUMI: c1 and c6) and a CPU node: each GCD found by its address,
    /// a made-up address found nowhere.
    #[test]
    fn each_gcd_is_found_by_its_address() {
        let root = std::env::temp_dir().join(format!("sb-kfd-{}", std::process::id()));
        let node = |n: u32, props: &str| {
            let d = root.join(n.to_string());
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("properties"), props).unwrap();
        };
        node(
            0,
            "cpu_cores_count 64\ngfx_target_version 0\ndomain 0\nlocation_id 0\n",
        );
        node(
            1,
            "simd_count 440\ngfx_target_version 90010\ndomain 0\nlocation_id 49408\n",
        );
        node(
            2,
            "simd_count 440\ngfx_target_version 90402\ndomain 0\nlocation_id 50688\n",
        );
        let at = |s: &str| architecture(&root, &Bdf::parse(s).unwrap());
        assert_eq!(at("0000:c1:00.0").as_deref(), Some("gfx90a"));
        assert_eq!(at("0000:c6:00.0").as_deref(), Some("gfx942"));
        assert_eq!(at("0001:c1:00.0"), None);
        assert_eq!(at("fffe:5b:00.0"), None);
        assert_eq!(
            architecture(&root.join("absent"), &Bdf::parse("0000:c1:00.0").unwrap()),
            None
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
