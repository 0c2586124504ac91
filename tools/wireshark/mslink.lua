-- mslink.lua: a Wireshark dissector for mslink's link frames, as `mslink emulate --pcap-link FILE`
-- writes them (pcap link type 147, LINKTYPE_USER0).
--
--   wireshark -X lua_script:tools/wireshark/mslink.lua FILE
--   tshark -X lua_script:tools/wireshark/mslink.lua -r FILE -T fields -e mslink.seq -e ip.src
--
-- or copy this file into Wireshark's personal Lua plugins folder (Help > About Wireshark >
-- Folders > Personal Lua Plugins; ~/.local/lib/wireshark/plugins on Linux).
--
-- Each record is a 16-byte pseudo-header (crates/emu/src/linkpcap.rs says what it holds: the
-- direction, what the channel did to the frame, the service, its scheme and the framing the
-- link configuration fixes) followed by the frame exactly as the sending link end emitted it.
-- The frame formats are those of crates/wire/src/link (frame.rs: service tag and CRC-32;
-- header.rs: the data and control headers of the ARQ and XOR FEC services) and of
-- crates/link/src/service/rs_fec/frame.rs (the Reed-Solomon service), 004 §IV: a one-byte
-- service tag leads each frame on a link shared by several services, the service's header
-- follows, a CRC-32 (IEEE, big-endian) over tag and service bytes trails it. A data frame that
-- carries a whole IP packet hands it to Wireshark's IP dissector.
--
-- Retransmissions are found as TCP's analysis finds them: per direction and service, a data
-- frame whose sequence number is not ahead of the highest one sent so far (modulo the sequence
-- space) is a retransmission (mslink.retransmission, mslink.retransmission_of).

local mslink = Proto("mslink", "mslink multi-service link frame")

local SCHEMES = {
	[0] = "raw",
	[1] = "xor_fec",
	[2] = "go_back_n",
	[3] = "selective_repeat",
	[4] = "karn_rlp",
	[5] = "oos_rlp",
	[6] = "persistent",
	[7] = "rs_fec",
	[8] = "snoop",
	[255] = "unknown",
}
local DIRS = { [0] = "left to right", [1] = "right to left" }
local DIR_SHORT = { [0] = "L->R", [1] = "R->L" }
local CHANNEL = { [0] = "delivered", [1] = "lost", [2] = "truncated", [3] = "corrupted" }
local FP = { [0] = "whole", [1] = "first", [2] = "middle", [3] = "last" }
-- Control kinds (crates/wire/src/link/header.rs, `kind`).
local KINDS = { [1] = "ack", [2] = "nack", [3] = "keepalive", [4] = "parity" }
local RS_OUTCOME = { [0] = "clean", [1] = "corrected", [2] = "failed", [3] = "truncated" }

local f = {
	-- pseudo-header
	version = ProtoField.uint8("mslink.version", "Pseudo-header version"),
	hlen = ProtoField.uint8("mslink.pseudo_len", "Pseudo-header length"),
	dir = ProtoField.uint8("mslink.dir", "Direction", base.DEC, DIRS),
	channel = ProtoField.uint8("mslink.channel", "Channel", base.DEC, CHANNEL),
	lost = ProtoField.bool("mslink.lost", "Lost or damaged by the channel"),
	service = ProtoField.uint8("mslink.service", "Service"),
	scheme = ProtoField.uint8("mslink.scheme", "Scheme", base.DEC, SCHEMES),
	scheme_name = ProtoField.string("mslink.scheme_name", "Scheme name"),
	flags = ProtoField.uint8("mslink.flags", "Framing", base.HEX),
	f_tagged = ProtoField.bool("mslink.flags.tagged", "Service tag", 8, nil, 0x01),
	f_crc = ProtoField.bool("mslink.flags.crc", "Link CRC-32", 8, nil, 0x02),
	f_seg = ProtoField.bool("mslink.flags.segmented", "Segmented (fragment position)", 8, nil, 0x04),
	f_pig = ProtoField.bool("mslink.flags.piggyback", "Piggybacked ack", 8, nil, 0x08),
	width = ProtoField.uint8("mslink.seq_width", "Sequence field width (bytes)"),
	arrived = ProtoField.uint32("mslink.arrived", "Bytes that arrived"),
	bits = ProtoField.uint32("mslink.bits_inverted", "Bits inverted"),
	-- link framing
	tag = ProtoField.uint8("mslink.tag", "Service tag"),
	crc = ProtoField.uint32("mslink.crc", "CRC-32", base.HEX),
	crc_ok = ProtoField.bool("mslink.crc_ok", "CRC-32 good"),
	-- service headers
	ftype = ProtoField.string("mslink.type", "Frame type"),
	control = ProtoField.bool("mslink.control", "Control frame"),
	kind = ProtoField.uint8("mslink.kind", "Control kind", base.DEC, KINDS),
	fp = ProtoField.uint8("mslink.fp", "Fragment position", base.DEC, FP),
	seq = ProtoField.uint32("mslink.seq", "Sequence number"),
	ack = ProtoField.uint32("mslink.ack", "Acknowledgement (next expected)"),
	nack_first = ProtoField.uint32("mslink.nack.first", "First missing"),
	nack_more = ProtoField.uint32("mslink.nack.more", "Further missing (bitmap)", base.HEX),
	nack_missing = ProtoField.string("mslink.nack.missing", "Missing"),
	ka_next = ProtoField.uint32("mslink.keepalive.next", "Next sequence"),
	ka_base = ProtoField.uint32("mslink.keepalive.base", "Oldest held"),
	par_first = ProtoField.uint32("mslink.parity.first", "Parity block's first sequence"),
	par_count = ProtoField.uint8("mslink.parity.count", "Data frames covered"),
	par_bytes = ProtoField.bytes("mslink.parity.bytes", "Parity"),
	retrans = ProtoField.bool("mslink.retransmission", "Retransmission"),
	retrans_of = ProtoField.framenum("mslink.retransmission_of", "First sent in frame"),
	payload = ProtoField.bytes("mslink.payload", "Payload"),
	-- Reed-Solomon service (rs_fec/frame.rs)
	rs_header_parity = ProtoField.bytes("mslink.rs.header_parity", "Header RS(12,6) parity"),
	rs_piece = ProtoField.uint8("mslink.rs.piece", "Piece position in the SDU", base.DEC, FP),
	rs_len = ProtoField.uint16("mslink.rs.len", "Payload length"),
	rs_nsym = ProtoField.uint8("mslink.rs.nsym", "Parity symbols per block"),
	rs_blocks = ProtoField.uint8("mslink.rs.blocks", "Blocks"),
	rs_block = ProtoField.bytes("mslink.rs.block", "Block"),
	rs_outcome = ProtoField.uint8("mslink.rs.outcome", "Outcome", base.DEC, RS_OUTCOME),
	rs_load = ProtoField.uint8("mslink.rs.load", "Load (of 31)"),
	rs_about = ProtoField.uint32("mslink.rs.about", "Reported frame"),
	rs_crc = ProtoField.uint32("mslink.rs.crc", "CRC-32 (header info and payload)", base.HEX),
}
local fields = {}
for _, v in pairs(f) do
	fields[#fields + 1] = v
end
mslink.fields = fields

local ef_bad = ProtoExpert.new("mslink.malformed", "Malformed mslink record", expert.group.MALFORMED, expert.severity.ERROR)
local ef_lost = ProtoExpert.new("mslink.channel_lost", "Frame lost or damaged by the channel", expert.group.SEQUENCE, expert.severity.NOTE)
local ef_retrans = ProtoExpert.new("mslink.retransmission.expert", "Retransmission", expert.group.SEQUENCE, expert.severity.NOTE)
mslink.experts = { ef_bad, ef_lost, ef_retrans }

mslink.prefs.check_crc = Pref.bool("Verify the link CRC-32", true, "Recompute each frame's CRC-32")

local ip_dissector = Dissector.get("ip")
local ipv6_dissector = Dissector.get("ipv6")
local data_dissector = Dissector.get("data")

-- Bit operations: bit32 (Lua 5.2), Wireshark's `bit` (LuaBitOp), or none (CRC not checked).
local B = bit32 or bit
local crc_table
local function crc32(s)
	if not B then
		return nil
	end
	if not crc_table then
		crc_table = {}
		for i = 0, 255 do
			local c = i
			for _ = 1, 8 do
				if B.band(c, 1) == 1 then
					c = B.bxor(B.rshift(c, 1), 0xEDB88320)
				else
					c = B.rshift(c, 1)
				end
			end
			crc_table[i] = c % 4294967296
		end
	end
	local crc = 0xFFFFFFFF
	local band, bxor, rshift, byte = B.band, B.bxor, B.rshift, string.byte
	for i = 1, #s do
		crc = bxor(rshift(crc, 8), crc_table[band(bxor(crc, byte(s, i)), 0xFF)])
	end
	return bxor(crc, 0xFFFFFFFF) % 4294967296
end

-- Retransmission analysis: per "dir:service", the highest sequence sent and where each was
-- first sent; results per frame number, so later passes show what the first found.
local state, by_frame = {}, {}
function mslink.init()
	state, by_frame = {}, {}
end

local function analyse(pinfo, key, seq, modulus)
	local r = by_frame[pinfo.number]
	if r then
		return r
	end
	r = { retrans = false }
	local s = state[key]
	if not s then
		s = { max = seq, first = {} }
		state[key] = s
		s.first[seq] = pinfo.number
	else
		local d = (seq - s.max) % modulus
		if d == 0 or d >= modulus / 2 then
			r.retrans = true
			r.of = s.first[seq]
		else
			s.max = seq
			s.first[seq] = pinfo.number
		end
	end
	by_frame[pinfo.number] = r
	return r
end

local function be(tvb, off, n)
	local v = 0
	for i = 0, n - 1 do
		v = v * 256 + tvb(off + i, 1):uint()
	end
	return v
end

-- The payload of a data frame: IP when it is a whole packet, else bytes.
local function payload(tvb, pinfo, tree, whole)
	if tvb:len() == 0 then
		return
	end
	local v = math.floor(tvb(0, 1):uint() / 16)
	if whole and v == 4 and tvb:len() >= 20 and ip_dissector then
		ip_dissector:call(tvb, pinfo, tree)
	elseif whole and v == 6 and tvb:len() >= 40 and ipv6_dissector then
		ipv6_dissector:call(tvb, pinfo, tree)
	else
		tree:add(f.payload, tvb())
	end
end

-- The header of crates/wire/src/link/header.rs at the start of `tvb` (the service bytes).
-- Returns a summary for the Info column and the payload tvb and whether it is a whole packet.
local function dissect_arq(tvb, pinfo, t, hf, key, arq)
	local w = hf.width
	local n = tvb:len()
	if n < 1 then
		t:add_proto_expert_info(ef_bad, "empty service bytes")
		return "empty"
	end
	local first = tvb(0, 1):uint()
	local sbits = w * 8 - (hf.segmented and 3 or 1)
	local modulus = 2 ^ sbits
	if first < 128 then
		local hlen = hf.piggyback and 2 * w or w
		if n < hlen then
			t:add_proto_expert_info(ef_bad, "data frame shorter than its header")
			return "data (truncated header)"
		end
		t:add(f.ftype, "data"):set_generated()
		t:add(f.control, tvb(0, 1), false)
		local raw = be(tvb, 0, w)
		local fp = 0
		if hf.segmented then
			fp = math.floor(raw / 2 ^ (w * 8 - 3)) % 4
			t:add(f.fp, tvb(0, 1), fp)
		end
		local seq = raw % modulus
		t:add(f.seq, tvb(0, w), seq)
		local info = "DATA seq=" .. seq
		if hf.piggyback then
			local ack = be(tvb, w, w) % modulus
			t:add(f.ack, tvb(w, w), ack)
			info = info .. " ack=" .. ack
		end
		if fp ~= 0 then
			info = info .. " " .. FP[fp]
		end
		if arq then
			local r = analyse(pinfo, key, seq, modulus)
			local it = t:add(f.retrans, r.retrans)
			it:set_generated()
			if r.retrans then
				t:add_proto_expert_info(ef_retrans)
				if r.of then
					t:add(f.retrans_of, r.of):set_generated()
				end
				info = info .. " [retransmission]"
			end
		end
		if hlen < n then
			return info, tvb(hlen):tvb(), fp == 0, true
		end
		return info
	end
	local kind = math.floor(first / 16) % 8
	t:add(f.control, tvb(0, 1), true)
	t:add(f.kind, tvb(0, 1), kind)
	local name = KINDS[kind] or ("unknown kind " .. kind)
	t:add(f.ftype, name):set_generated()
	local function field(i)
		return be(tvb, 1 + i * w, w) % modulus
	end
	local function need(len)
		if n < len then
			t:add_proto_expert_info(ef_bad, name .. " frame shorter than its header")
			return false
		end
		return true
	end
	if kind == 1 then
		if not need(1 + w) then
			return "ACK (truncated)"
		end
		t:add(f.ack, tvb(1, w), field(0))
		return "ACK ack=" .. field(0)
	elseif kind == 2 then
		if not need(1 + 2 * w + 4) then
			return "NACK (truncated)"
		end
		local ack, nfirst = field(0), field(1)
		local more = tvb(1 + 2 * w, 4):uint()
		t:add(f.ack, tvb(1, w), ack)
		t:add(f.nack_first, tvb(1 + w, w), nfirst)
		t:add(f.nack_more, tvb(1 + 2 * w, 4), more)
		local missing = { tostring(nfirst) }
		for i = 0, 31 do
			if math.floor(more / 2 ^ i) % 2 == 1 then
				missing[#missing + 1] = tostring((nfirst + 1 + i) % modulus)
			end
		end
		local list = table.concat(missing, ",")
		t:add(f.nack_missing, list):set_generated()
		return "NACK ack=" .. ack .. " missing=" .. list
	elseif kind == 3 then
		if not need(1 + 2 * w) then
			return "KEEPALIVE (truncated)"
		end
		t:add(f.ka_next, tvb(1, w), field(0))
		t:add(f.ka_base, tvb(1 + w, w), field(1))
		return "KEEPALIVE next=" .. field(0) .. " base=" .. field(1)
	elseif kind == 4 then
		if not need(2 + w) then
			return "PARITY (truncated)"
		end
		local pfirst, count = field(0), tvb(1 + w, 1):uint()
		t:add(f.par_first, tvb(1, w), pfirst)
		t:add(f.par_count, tvb(1 + w, 1), count)
		if n > 2 + w then
			t:add(f.par_bytes, tvb(2 + w))
		end
		local last = (pfirst + math.max(count, 1) - 1) % modulus
		return "PARITY seq=" .. pfirst .. ".." .. last .. " (" .. count .. " frames)"
	end
	return "CONTROL kind=" .. kind
end

-- The Reed-Solomon service's frames (crates/link/src/service/rs_fec/frame.rs): a 12-byte
-- header codeword (6 information bytes, 6 RS(12,6) parity), then RS(255, 255 - nsym) blocks
-- over payload || CRC-32 (data), or CRC-32 and 6 parity bytes (report). Shown as sent (the
-- record holds the frame before the channel), so the systematic bytes are read directly.
local function dissect_rs(tvb, pinfo, t, key)
	local n = tvb:len()
	if n < 12 then
		t:add_proto_expert_info(ef_bad, "shorter than the 12-byte RS header")
		return "RS (truncated header)"
	end
	t:add(f.rs_header_parity, tvb(6, 6))
	local b0 = tvb(0, 1):uint()
	if b0 < 128 then
		local fp = math.floor(b0 / 32) % 4
		local piece = math.floor(b0 / 8) % 4
		local len = (b0 % 8) * 256 + tvb(1, 1):uint()
		local nsym = tvb(2, 1):uint()
		local seq = tvb(3, 2):uint()
		local blocks = tvb(5, 1):uint()
		t:add(f.ftype, "data"):set_generated()
		t:add(f.fp, tvb(0, 1), fp)
		t:add(f.rs_piece, tvb(0, 1), piece)
		t:add(f.rs_len, tvb(0, 2), len)
		t:add(f.rs_nsym, tvb(2, 1), nsym)
		t:add(f.seq, tvb(3, 2), seq)
		t:add(f.rs_blocks, tvb(5, 1), blocks)
		local r = analyse(pinfo, key, seq, 65536)
		t:add(f.retrans, r.retrans):set_generated()
		local info = "RS DATA seq=" .. seq .. " len=" .. len .. " nsym=" .. nsym
		if r.retrans then
			t:add_proto_expert_info(ef_retrans)
			if r.of then
				t:add(f.retrans_of, r.of):set_generated()
			end
			info = info .. " [retransmission]"
		end
		-- The data bytes of the blocks, in order: payload then CRC.
		local data = ByteArray.new()
		local k = 255 - nsym
		local off, left = 12, len + 4
		while left > 0 and off < n do
			local take = math.min(k, left, n - off)
			local blen = math.min(take + nsym, n - off)
			t:add(f.rs_block, tvb(off, blen))
			data:append(tvb(off, take):bytes())
			off = off + blen
			left = left - take
		end
		if data:len() >= len + 4 then
			local dt = data:tvb("RS data")
			t:add(f.rs_crc, dt(len, 4))
			return info, dt(0, len):tvb(), fp == 0 and piece == 0, len > 0
		end
		t:add_proto_expert_info(ef_bad, "frame shorter than its blocks")
		return info
	end
	local outcome = math.floor(b0 / 32) % 4
	t:add(f.ftype, "report"):set_generated()
	t:add(f.control, tvb(0, 1), true)
	t:add(f.rs_outcome, tvb(0, 1), outcome)
	t:add(f.rs_load, tvb(0, 1), b0 % 32)
	t:add(f.ack, tvb(1, 2))
	t:add(f.rs_about, tvb(3, 2))
	t:add(f.rs_nsym, tvb(5, 1))
	if n >= 16 then
		t:add(f.rs_crc, tvb(12, 4))
	end
	return "RS REPORT ack=" .. tvb(1, 2):uint() .. " about=" .. tvb(3, 2):uint() .. " " .. RS_OUTCOME[outcome]
end

function mslink.dissector(tvb, pinfo, tree)
	local len = tvb:len()
	if len < 2 then
		return 0
	end
	pinfo.cols.protocol = "MSLINK"
	local root = tree:add(mslink, tvb(), "mslink link frame")
	local version, hlen = tvb(0, 1):uint(), tvb(1, 1):uint()
	if version ~= 1 or hlen < 16 or len < hlen then
		root:add_proto_expert_info(ef_bad, "unknown pseudo-header (version " .. version .. ", length " .. hlen .. ")")
		pinfo.cols.info = "unknown pseudo-header"
		return len
	end
	local ph = root:add(tvb(0, hlen), "Pseudo-header (mslink emulate --pcap-link)")
	ph:add(f.version, tvb(0, 1))
	ph:add(f.hlen, tvb(1, 1))
	local dir, channel = tvb(2, 1):uint(), tvb(3, 1):uint()
	local service, scheme = tvb(4, 1):uint(), tvb(5, 1):uint()
	local flags, width = tvb(6, 1):uint(), tvb(7, 1):uint()
	ph:add(f.dir, tvb(2, 1))
	ph:add(f.channel, tvb(3, 1))
	ph:add(f.lost, channel ~= 0):set_generated()
	ph:add(f.service, tvb(4, 1))
	ph:add(f.scheme, tvb(5, 1))
	ph:add(f.scheme_name, SCHEMES[scheme] or "unknown"):set_generated()
	local ft = ph:add(f.flags, tvb(6, 1))
	ft:add(f.f_tagged, tvb(6, 1))
	ft:add(f.f_crc, tvb(6, 1))
	ft:add(f.f_seg, tvb(6, 1))
	ft:add(f.f_pig, tvb(6, 1))
	ph:add(f.width, tvb(7, 1))
	ph:add(f.arrived, tvb(8, 4))
	ph:add(f.bits, tvb(12, 4))
	local hf = {
		tagged = flags % 2 == 1,
		crc = math.floor(flags / 2) % 2 == 1,
		segmented = math.floor(flags / 4) % 2 == 1,
		piggyback = math.floor(flags / 8) % 2 == 1,
		width = width,
	}
	local info = DIR_SHORT[dir] or "?"
	info = info .. " svc " .. service .. " " .. (SCHEMES[scheme] or "?")
	if channel ~= 0 then
		root:add_proto_expert_info(ef_lost, "channel: " .. (CHANNEL[channel] or "?"))
	end
	local flen = len - hlen
	local tag_len = hf.tagged and 1 or 0
	local crc_len = hf.crc and 4 or 0
	if flen < math.max(tag_len + crc_len, 1) then
		root:add_proto_expert_info(ef_bad, "frame shorter than its framing")
		pinfo.cols.info = info .. " (short frame)"
		return len
	end
	local frame = tvb(hlen):tvb()
	if hf.tagged then
		root:add(f.tag, frame(0, 1))
	end
	if hf.crc then
		local want = frame(flen - 4, 4):uint()
		root:add(f.crc, frame(flen - 4, 4))
		if mslink.prefs.check_crc then
			local got = crc32(frame:raw(0, flen - 4))
			if got then
				root:add(f.crc_ok, got == want):set_generated()
			end
		end
	end
	local sb_len = flen - tag_len - crc_len
	local key = dir .. ":" .. service
	local summary, body, whole, has_body
	if sb_len == 0 then
		root:add_proto_expert_info(ef_bad, "no service bytes between the framing")
		summary = "empty"
	else
		local sb = frame(tag_len, sb_len):tvb()
		local st = root:add(frame(tag_len, sb_len), "Service " .. service .. " (" .. (SCHEMES[scheme] or "?") .. ")")
		if scheme == 7 then
			summary, body, whole, has_body = dissect_rs(sb, pinfo, st, key)
		elseif (scheme == 0 or scheme == 8) and not hf.segmented then
			-- Raw Link and Snoop carry no header on a link that does not segment (004: "raw 0 B").
			st:add(f.ftype, "data"):set_generated()
			summary, body, whole, has_body = "DATA", sb, true, true
		elseif width == 1 or width == 2 or width == 4 then
			local arq = scheme >= 2 and scheme <= 6
			summary, body, whole, has_body = dissect_arq(sb, pinfo, st, hf, key, arq)
		else
			st:add_proto_expert_info(ef_bad, "unknown sequence width " .. width)
			summary = "?"
		end
	end
	info = info .. " " .. summary
	if channel ~= 0 then
		info = info .. " [" .. string.upper(CHANNEL[channel] or "?") .. "]"
	end
	if body and has_body then
		payload(body, pinfo, tree, whole)
		-- The IP dissector wrote its own summary; ours goes first.
		pinfo.cols.protocol = "MSLINK"
		pinfo.cols.info:prepend(info .. " | ")
	else
		pinfo.cols.info = info
	end
	return len
end

local encap = (wtap_encaps and wtap_encaps.USER0) or (wtap and wtap.USER0)
DissectorTable.get("wtap_encap"):add(encap, mslink)
