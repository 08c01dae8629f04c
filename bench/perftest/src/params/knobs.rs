//! How the perftest tools spell the knobs that library hints name ([`uverbs::knob`]): the
//! program installs [`perftest_flag`] so a hint reads "pick a populated index (-x)".

use uverbs::knob::Knob;

/// perftest's option for `k`, where it has one.
pub fn perftest_flag(k: Knob) -> Option<&'static str> {
    Some(match k {
        Knob::Device => "-d/--ib-dev",
        Knob::IbPort => "-i",
        Knob::GidIndex => "-x",
        Knob::ServerPort => "-p/--port",
        Knob::SendDepth => "-t",
        Knob::RecvDepth => "--rx-depth",
        Knob::InlineSize => "-I",
        Knob::HugePages => "--use_hugepages",
        Knob::CryptoCredential => "--credentials_path",
        Knob::KeyProgram => "--data_enc_key_app_path",
        Knob::WriteTransport | Knob::WriteDoorbell => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flag_is_a_perftest_option() {
        let table = crate::params::usage_for(crate::params::persona::Persona::V629, crate::params::Tool::WriteBw, "ib_write_bw");
        for k in [Knob::Device, Knob::IbPort, Knob::GidIndex, Knob::ServerPort, Knob::SendDepth, Knob::InlineSize, Knob::HugePages] {
            let f = perftest_flag(k).unwrap();
            let short = f.split('/').next().unwrap();
            assert!(table.contains(short), "{f} not in ib_write_bw -h");
        }
        assert_eq!(perftest_flag(Knob::WriteTransport), None);
    }
}
