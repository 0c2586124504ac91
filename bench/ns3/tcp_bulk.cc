// The ns-3 side of mslink's TCP benchmark (docs/PERFORMANCE.md, issue 4): N NewReno bulk
// transfers over one point-to-point link with independent loss of data packets, the same
// work `mslink sim scenarios/bench/tcp_bulk_*.toml` does. Written for ns-3 3.37 (Debian's
// libns3-dev); built and run by bench/ns3/run.sh.
//
//   tcp_bulk --flows=1 --rateMbps=5 --bytes=100000000 --loss=0.015
//
// Socket buffers are 128 KiB at both ends, as in the mslink scenarios.
//
// Prints one line: flows, link packets (data + ACK transmissions on the link), simulated
// seconds to the last byte, and goodput.

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"

#include <cstdio>

using namespace ns3;

static uint64_t g_linkPackets = 0;
static void CountTx(Ptr<const Packet>) { ++g_linkPackets; }
static double g_lastRx = 0.0;
static void SinkRx(Ptr<const Packet>, const Address&) { g_lastRx = Simulator::Now().GetSeconds(); }

int main(int argc, char* argv[]) {
  uint32_t flows = 1;
  double rateMbps = 5.0;
  double delayMs = 3.0;
  uint64_t bytes = 100000000;
  double loss = 0.015;
  uint32_t segment = 1000;
  uint32_t seed = 1;
  CommandLine cmd;
  cmd.AddValue("flows", "bulk transfers", flows);
  cmd.AddValue("rateMbps", "link rate, Mbit/s", rateMbps);
  cmd.AddValue("delayMs", "one-way delay, ms", delayMs);
  cmd.AddValue("bytes", "bytes per transfer", bytes);
  cmd.AddValue("loss", "independent loss rate of data packets", loss);
  cmd.AddValue("segment", "TCP segment size, bytes", segment);
  cmd.AddValue("seed", "run number", seed);
  cmd.Parse(argc, argv);

  RngSeedManager::SetRun(seed);
  Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpNewReno::GetTypeId()));
  Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(segment));
  Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(131072));
  Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(131072));
  Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(false));

  NodeContainer nodes;
  nodes.Create(2);
  PointToPointHelper p2p;
  std::ostringstream rate;
  rate << rateMbps << "Mbps";
  p2p.SetDeviceAttribute("DataRate", StringValue(rate.str()));
  p2p.SetChannelAttribute("Delay", TimeValue(MilliSeconds(delayMs)));
  NetDeviceContainer devs = p2p.Install(nodes);

  // Loss of data packets only: the error model sits on the receiver's device.
  Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();
  em->SetAttribute("ErrorRate", DoubleValue(loss));
  em->SetAttribute("ErrorUnit", StringValue("ERROR_UNIT_PACKET"));
  devs.Get(1)->SetAttribute("ReceiveErrorModel", PointerValue(em));
  devs.Get(0)->TraceConnectWithoutContext("PhyTxBegin", MakeCallback(&CountTx));
  devs.Get(1)->TraceConnectWithoutContext("PhyTxBegin", MakeCallback(&CountTx));

  InternetStackHelper stack;
  stack.Install(nodes);
  Ipv4AddressHelper addr;
  addr.SetBase("10.0.0.0", "255.255.255.0");
  Ipv4InterfaceContainer ifs = addr.Assign(devs);

  ApplicationContainer sinks;
  std::vector<Ptr<PacketSink>> sinkPtrs;
  for (uint32_t i = 0; i < flows; ++i) {
    uint16_t port = 5000 + i;
    BulkSendHelper src("ns3::TcpSocketFactory", InetSocketAddress(ifs.GetAddress(1), port));
    src.SetAttribute("MaxBytes", UintegerValue(bytes));
    src.SetAttribute("SendSize", UintegerValue(segment));
    src.Install(nodes.Get(0)).Start(Seconds(0.0));
    PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
    ApplicationContainer s = sink.Install(nodes.Get(1));
    s.Start(Seconds(0.0));
    sinkPtrs.push_back(DynamicCast<PacketSink>(s.Get(0)));
    s.Get(0)->TraceConnectWithoutContext("Rx", MakeCallback(&SinkRx));
  }
  Simulator::Run();
  uint64_t received = 0;
  for (auto& s : sinkPtrs) received += s->GetTotalRx();
  double t = g_lastRx;
  Simulator::Destroy();
  std::printf("flows=%u link_packets=%llu sim_seconds=%.3f goodput_bps=%.0f received=%llu\n", flows,
              (unsigned long long)g_linkPackets, t, received * 8.0 / t,
              (unsigned long long)received);
  return 0;
}
