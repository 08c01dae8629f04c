#!/usr/bin/env python3
"""Self-check of the crypto oracle's output (own code). Decodes the DEVX commands and the UMR /
data WQEs libmlx5 produced and asserts what perftest 6.06 asked for ended up where the PRM says.
Exits 1 on the first mismatch, so a changed libmlx5 or a broken shim cannot pass silently.
usage: check.py OUTDIR"""
import json, os, sys

OUT = sys.argv[1]
fails = []


def need(cond, what):
    if not cond:
        fails.append(what)


def field(buf, bit, width):
    """PRM field: big-endian bit string, bit 0 = MSB of byte 0."""
    v = 0
    for i in range(width):
        b = bit + i
        v = (v << 1) | ((buf[b // 8] >> (7 - b % 8)) & 1)
    return v


def lines(fn):
    return [json.loads(l) for l in open(os.path.join(OUT, fn)) if l.strip()]


# bit offsets (prm_offsets.py over rdma-core v44.0 mlx5_ifc.h)
LOGIN_CRED_PTR, LOGIN_KEK_PTR, LOGIN_CRED = 0x108, 0x128, 0x280
DEK_KEY_SIZE, DEK_HAS_KEYTAG, DEK_PURPOSE, DEK_PD, DEK_OPAQUE, DEK_KEY = 0xd4, 0xd8, 0xdc, 0xe8, 0x200, 0x280
MKC = 0x80
MKC_FIELDS = {'free': (0x01, 1), 'umr_en': (0x10, 1), 'lr': (0x15, 1), 'access_mode_1_0': (0x16, 2), 'qpn': (0x20, 24),
              'mkey_7_0': (0x38, 8), 'bsf_en': (0x61, 1), 'en_rinval': (0x67, 1), 'pd': (0x68, 24),
              'bsf_octword_size': (0x100, 32), 'translations_octword_size': (0x1a0, 32), 'crypto_en': (0x1e3, 2)}
ENC_ORDER = {(1, 0): 2, (1, 1): 0, (0, 0): 1, (0, 1): 3}  # (encrypt_on_tx, sig_before) -> PRM enc_order
BS_SELECTOR = {512: 1, 520: 2, 4048: 6, 4096: 3, 4160: 4}

for variant in ('multi_block', 'single_block', 'multi_block_shut_up_bf'):
    setup = lines('setup_%s.json' % variant)[0]
    need(setup['modify_rc'] == [0, 0, 0], '%s: modify_qp rc' % variant)
    need(setup['crypto_caps']['flags'] == 3, '%s: crypto caps flags (CRYPTO|WRAPPED_OPERATIONAL)' % variant)
    need(setup['crypto_caps']['crypto_engines'] == (2 if variant == 'single_block' else 6), '%s: crypto_engines' % variant)
    mkey_lkey = int(setup['mkey_lkey'], 16)
    qpn = int(setup['qpn'], 16)

    devx = lines('devx_%s.jsonl' % variant)
    by = {}
    for r in devx:
        by.setdefault(r['label'], []).append(r)
    caps = [r for r in devx if r.get('what') == 'QUERY_HCA_CAP']
    need([r['op_mod'] for r in caps] == ['0x1', '0x35'], '%s: QUERY_HCA_CAP op_mods %s' % (variant, [r['op_mod'] for r in caps]))
    login = by['mlx5dv_crypto_login'][0]
    b = bytes.fromhex(login['cmd_in'])
    need(login['cmd_in_len'] == 272 and field(b, 0, 16) == 0xa00 and field(b, 0x30, 16) == 0x1f, '%s: login header' % variant)
    need(b[LOGIN_CRED // 8:LOGIN_CRED // 8 + 48] == bytes((i * 3 + 1) & 0xff for i in range(48)), '%s: login credential' % variant)
    need(field(b, LOGIN_CRED_PTR, 24) == 0 and field(b, LOGIN_KEK_PTR, 24) == 0, '%s: login credential/kek ids' % variant)
    dek_ids = []
    for k, base in ((0, 0xa0), (1, 0xc0)):
        d = by['mlx5dv_dek_create[%d]' % k][0]
        b = bytes.fromhex(d['cmd_in'])
        need(field(b, 0, 16) == 0xa00 and field(b, 0x30, 16) == 0xc, '%s: dek%d header' % (variant, k))
        need(field(b, DEK_KEY_SIZE, 4) == 0 and field(b, DEK_HAS_KEYTAG, 1) == 0 and field(b, DEK_PURPOSE, 4) == 3,
             '%s: dek%d size/keytag/purpose' % (variant, k))
        need(field(b, DEK_PD, 24) == 0x19, '%s: dek%d pd' % (variant, k))
        need(b[DEK_OPAQUE // 8:DEK_OPAQUE // 8 + 8] == bytes([0x11] + [0] * 7), '%s: dek%d opaque' % (variant, k))
        need(b[DEK_KEY // 8:DEK_KEY // 8 + 128] == bytes(range(base, base + 40)) + bytes(88), '%s: dek%d key' % (variant, k))
        dek_ids.append(int(d['id'], 16))
    mk = by['mlx5dv_create_mkey(INDIRECT|CRYPTO,1)'][0]
    b = bytes.fromhex(mk['cmd_in'])
    need(field(b, 0, 16) == 0x200, '%s: mkey opcode' % variant)
    want = {'free': 1, 'umr_en': 1, 'lr': 1, 'access_mode_1_0': 2, 'qpn': 0xffffff, 'mkey_7_0': 0, 'bsf_en': 1, 'en_rinval': 0,
            'pd': 0x19, 'bsf_octword_size': 4, 'translations_octword_size': 4, 'crypto_en': 1}
    for n, (o, w) in MKC_FIELDS.items():
        need(field(b, MKC + o, w) == want[n], '%s: mkc.%s = %d' % (variant, n, field(b, MKC + o, w)))
    need(int(mk['id'], 16) << 8 == mkey_lkey, '%s: mkey lkey = index << 8' % variant)
    for r in devx:  # ioctl framing: header, attribute ids / lengths / MANDATORY flag, mlx5 driver id 1
        io = r['ioctl']
        att = [(a['attr_id'], a['len'], a['flags']) for a in io['attrs']]
        if r['method'] == 'DEVX_OTHER':
            want_io = ('0x1000', '0x1000', [('0x1000', r['cmd_in_len'], 1), ('0x1001', r['cmd_out_len'], 1)])
        elif r['method'] == 'DEVX_OBJ_CREATE':
            want_io = ('0x1001', '0x1000', [('0x1000', 0, 1), ('0x1001', r['cmd_in_len'], 1), ('0x1002', r['cmd_out_len'], 1)])
        else:
            want_io = ('0x1001', '0x1001', [('0x1000', 0, 1)])
            need(io['attrs'][0]['data'] == r['handle'], '%s: destroy names the handle' % variant)
        need((io['object_id'], io['method_id'], att) == want_io and io['driver_id'] == 1
             and io['length'] == 24 + 16 * len(att), '%s: ioctl framing of %s' % (variant, r['label']))
    destroys = [r for r in devx if r['method'] == 'DEVX_OBJ_DESTROY']
    need([(r['destroys']['opcode'], r['destroys']['obj_type']) for r in destroys] ==
         [('0xa00', '0xc'), ('0xa00', '0xc'), ('0x200', '0x0'), ('0xa00', '0x1f')] and all(r['rc'] == 0 for r in destroys),
         '%s: destroys %s' % (variant, [(r['label'], r['rc']) for r in destroys]))

    posts = lines('umr_wqe_%s.jsonl' % variant)
    need(len(posts) == (3 if variant == 'single_block' else 15), '%s: number of posts %d' % (variant, len(posts)))
    for r in posts:
        n = '%s/%s' % (variant, r['name'])
        p, u, d = r['params'], r['umr'], r['data']
        if r['name'].endswith('_rejected'):
            need(u['rc'] == 22 and u['sq_cur_post_before'] == u['sq_cur_post_after'] and d is None, n + ': rejected (EINVAL, nothing posted)')
            continue
        need(u['rc'] == 0 and d['rc'] == 0 and r['completion_status'] == 0, n + ': rc')
        w = bytes.fromhex(u['wqe_bytes'])
        need(len(w) == u['ds'] * 16 == 256 and u['wqebb_count'] == 4, n + ': umr size')
        need(w[3] == 0x25 and int.from_bytes(w[1:3], 'big') == u['sq_cur_post_before'] & 0xffff, n + ': umr opcode/index')
        need(int.from_bytes(w[4:7], 'big') == qpn and w[11] == 0 and int.from_bytes(w[12:16], 'big') == mkey_lkey, n + ': umr ctrl')
        # UMR control segment (16..63), mkey context (64..127), KLM list (128..191), crypto BSF (192..255)
        need(w[16] == 0x80 and int.from_bytes(w[20:22], 'big') == 4 and int.from_bytes(w[22:24], 'big') == 4, n + ': umr ctrl seg flags/klm/bsf octowords')
        need(int.from_bytes(w[68:72], 'big') == 0xffffff00 | (mkey_lkey & 0xff), n + ': mkc qpn_mkey')
        need(int.from_bytes(w[88:96], 'big') == p['layout_sge']['length'], n + ': mkc len')
        need(int.from_bytes(w[128:132], 'big') == p['layout_sge']['length'] and int.from_bytes(w[132:136], 'big') == int(p['layout_sge']['lkey'], 16)
             and int.from_bytes(w[136:144], 'big') == int(p['layout_sge']['addr'], 16), n + ': klm')
        bsf = w[192:256]
        order = ENC_ORDER[(p['encrypt_on_tx'], 1 if p['signature_crypto_order'].endswith('BEFORE_CRYPTO_ON_TX') else 0)]
        need(bsf[0] == (2 << 6) | 1 and bsf[1] == order and bsf[3] == 0 and bsf[4:8] == b'\xff' * 4, n + ': bsf type/order/standard/raw size')
        need(bsf[8] == BS_SELECTOR[p['data_unit_size']], n + ': bsf bs_pointer')
        tweak = bytes.fromhex(p['initial_tweak'])
        need(bsf[16:32] == (tweak if variant == 'single_block' else tweak[::-1]), n + ': bsf tweak byte order')
        need(int.from_bytes(bsf[32:36], 'big') == int(p['dek_obj_id'], 16) == dek_ids[p['dek_index']], n + ': bsf dek')
        need(bsf[40:48] == bytes(8), n + ': bsf keytag')
        dw = bytes.fromhex(d['wqe_bytes'])
        op = {'RDMA_WRITE': 0x08, 'SEND': 0x0a, 'RDMA_READ': 0x10}[r['data_wr']['opcode']]
        need(dw[3] == op and dw[11] == 0x28, n + ': data opcode / fm_ce_se (small fence + CQ update)')
        need(d['sq_cur_post_before'] == u['sq_cur_post_after'] and d['sq_cur_post_after'] == d['sq_cur_post_before'] + 1, n + ': counters')
        seg = dw[-16:]
        need(int.from_bytes(seg[0:4], 'big') == 64 and int.from_bytes(seg[4:8], 'big') == mkey_lkey and seg[8:16] == bytes(8), n + ': data sge = (mkey, 0, 64)')

if fails:
    print('check FAILED:\n  ' + '\n  '.join(fails))
    sys.exit(1)
print('check ok: DEVX commands and %s decoded as expected' % 'UMR/data WQEs')
