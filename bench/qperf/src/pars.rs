//! The per-side parameters of qperf's request (`msg_size`, `time`, ...): one value each for
//! the local and the remote side, whether the user set it (for `-vu` and the "set but not
//! used" warning) and whether the current test used it. The command line (options.rs) sets
//! them; the tests read them and set their defaults.

/// The parameters a test can use; each exists once per side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Par {
    AccessRecv,
    Affinity,
    AltPort,
    Flip,
    Id,
    MsgSize,
    MtuSize,
    NoMsgs,
    PollMode,
    Port,
    RdAtomic,
    Sl,
    SockBufSize,
    SrcPathBits,
    StaticRate,
    Time,
    Timeout,
    UseCm,
}

pub const PAR_N: usize = 18;

/// How a parameter's value is shown by `-vu`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParKind {
    Long,
    Size,
    Time,
    Str,
}

impl Par {
    pub fn kind(self) -> ParKind {
        match self {
            Par::Id | Par::StaticRate => ParKind::Str,
            Par::MsgSize | Par::MtuSize | Par::SockBufSize | Par::SrcPathBits => ParKind::Size,
            Par::Time | Par::Timeout => ParKind::Time,
            _ => ParKind::Long,
        }
    }
}

/// The `-vu` rows, in stock qperf's order (static_rate is never shown).
pub const PAR_NAMES: [(&str, Par); 17] = [
    ("access_recv", Par::AccessRecv),
    ("affinity", Par::Affinity),
    ("alt_port", Par::AltPort),
    ("flip", Par::Flip),
    ("id", Par::Id),
    ("msg_size", Par::MsgSize),
    ("mtu_size", Par::MtuSize),
    ("no_msgs", Par::NoMsgs),
    ("poll_mode", Par::PollMode),
    ("port", Par::Port),
    ("rd_atomic", Par::RdAtomic),
    ("service_level", Par::Sl),
    ("sock_buf_size", Par::SockBufSize),
    ("src_path_bits", Par::SrcPathBits),
    ("time", Par::Time),
    ("timeout", Par::Timeout),
    ("use_cm", Par::UseCm),
];

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParInfo {
    pub val: u32,
    pub text: String,
    /// The option that set it, if the user did.
    pub set_by: Option<String>,
    /// Set by the user and not yet reported as unused.
    pub set: bool,
    /// Used by any test so far.
    pub used: bool,
    /// Used by the current test.
    pub inuse: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Loc,
    Rem,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pars {
    loc: Vec<ParInfo>,
    rem: Vec<ParInfo>,
}

impl Pars {
    pub fn new() -> Self {
        Pars { loc: vec![ParInfo::default(); PAR_N], rem: vec![ParInfo::default(); PAR_N] }
    }
    pub fn get(&self, side: Side, p: Par) -> &ParInfo {
        match side {
            Side::Loc => &self.loc[p as usize],
            Side::Rem => &self.rem[p as usize],
        }
    }
    fn get_mut(&mut self, side: Side, p: Par) -> &mut ParInfo {
        match side {
            Side::Loc => &mut self.loc[p as usize],
            Side::Rem => &mut self.rem[p as usize],
        }
    }
    pub fn loc(&self, p: Par) -> u32 {
        self.get(Side::Loc, p).val
    }
    pub fn rem(&self, p: Par) -> u32 {
        self.get(Side::Rem, p).val
    }
    /// Set by the user (option `name`).
    pub fn set_user(&mut self, side: Side, p: Par, name: &str, val: u32, text: &str) {
        let i = self.get_mut(side, p);
        i.set_by = Some(name.to_string());
        i.set = true;
        i.val = val;
        i.text = text.to_string();
    }
    /// A test's default: marks the parameter used, and sets it unless the user did.
    pub fn set_default(&mut self, p: Par, val: u32) {
        for side in [Side::Loc, Side::Rem] {
            self.set_default_side(side, p, val);
        }
    }
    pub fn set_default_side(&mut self, side: Side, p: Par, val: u32) {
        let i = self.get_mut(side, p);
        i.used = true;
        i.inuse = true;
        if i.set_by.is_none() {
            i.val = val;
        }
    }
    pub fn is_set(&self, side: Side, p: Par) -> bool {
        self.get(side, p).set_by.is_some()
    }
    pub fn use_par(&mut self, p: Par) {
        for side in [Side::Loc, Side::Rem] {
            let i = self.get_mut(side, p);
            i.used = true;
            i.inuse = true;
        }
    }
    pub fn start_test(&mut self) {
        for i in self.loc.iter_mut().chain(self.rem.iter_mut()) {
            i.inuse = false;
        }
    }
    /// "warning: -X set but not used in test T" for each option set but never used; each
    /// option name once per call.
    pub fn unused_warnings(&mut self, test: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut named: Vec<String> = Vec::new();
        for side in [Side::Loc, Side::Rem] {
            for idx in 0..PAR_N {
                let i = match side {
                    Side::Loc => &mut self.loc[idx],
                    Side::Rem => &mut self.rem[idx],
                };
                if i.used || !i.set {
                    continue;
                }
                let name = i.set_by.clone().unwrap_or_default();
                if named.contains(&name) {
                    // Stock qperf clears the later duplicates so they warn only once.
                    i.set = false;
                    continue;
                }
                out.push(format!("warning: {name} set but not used in test {test}"));
                named.push(name);
            }
        }
        out
    }
}
