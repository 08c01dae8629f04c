//! What the options leave behind besides the [`Params`](super::Params) fields: flags `apply`
//! sets and the refusals and derivations read once every option is known. A leaf: the option
//! table (`options`), the driver (`parse`) and `derive` all read it, and it names none of them.

/// Options seen that do not map to a field, or whose refusal waits until all options are known.
#[derive(Default)]
pub(super) struct State {
    pub(super) use_rss: bool,
    /// `--log_active_dci_streams` was given.
    pub(super) dci_active_given: bool,
    pub(super) gpu: Option<String>,
    pub(super) vendor: Option<String>,
    pub(super) use_ooo: bool,
    pub(super) data_validation: Option<String>,
    pub(super) write_with_imm: bool,
    pub(super) send_with_imm: bool,
    pub(super) run_infinitely: bool,
    pub(super) rate_limit_given: bool,
    /// `--rate_limit` as written (perftest matches it against its HW rate table as text).
    pub(super) rate_limit_text: Option<String>,
    /// `--rate_limit_type` was given (perftest's `is_rate_limit_type`).
    pub(super) rate_limit_type_given: bool,
}
