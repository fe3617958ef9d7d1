#include "metrics/address_allow_list.hpp"

#include <array>
#include <stdexcept>

namespace gatehouse::metrics {

namespace {

std::array<unsigned char, 16> bytes_of(const boost::asio::ip::address& address) {
    if (address.is_v6()) return address.to_v6().to_bytes();
    std::array<unsigned char, 16> out{};
    const auto v4 = address.to_v4().to_bytes();
    std::copy(v4.begin(), v4.end(), out.begin());
    return out;
}

bool same_prefix(const std::array<unsigned char, 16>& a, const std::array<unsigned char, 16>& b, unsigned bits) {
    for (unsigned i = 0; i < bits / 8; ++i)
        if (a[i] != b[i]) return false;
    if (const unsigned rest = bits % 8) {
        const unsigned char mask = static_cast<unsigned char>(0xff << (8 - rest));
        if ((a[bits / 8] & mask) != (b[bits / 8] & mask)) return false;
    }
    return true;
}

} // namespace

AddressAllowList::AddressAllowList(const std::vector<std::string>& entries) {
    for (const auto& entry : entries) {
        const auto slash = entry.find('/');
        boost::system::error_code ec;
        Block block;
        block.network = boost::asio::ip::make_address(entry.substr(0, slash), ec);
        if (ec) throw std::invalid_argument("'" + entry + "' is not an IP address or a CIDR block");
        const unsigned width = block.network.is_v4() ? 32 : 128;
        block.prefix = width;
        if (slash != std::string::npos) {
            const std::string bits = entry.substr(slash + 1);
            if (bits.empty() || bits.size() > 3 || bits.find_first_not_of("0123456789") != std::string::npos ||
                std::stoul(bits) > width)
                throw std::invalid_argument("'" + entry + "' has no prefix length between 0 and " +
                                            std::to_string(width));
            block.prefix = static_cast<unsigned>(std::stoul(bits));
        }
        blocks_.push_back(block);
    }
}

bool AddressAllowList::allows(const boost::asio::ip::address& peer) const {
    boost::asio::ip::address address = peer;
    if (address.is_v6() && address.to_v6().is_v4_mapped())
        address = boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, address.to_v6());
    for (const auto& block : blocks_)
        if (block.network.is_v4() == address.is_v4() &&
            same_prefix(bytes_of(block.network), bytes_of(address), block.prefix))
            return true;
    return false;
}

} // namespace gatehouse::metrics
