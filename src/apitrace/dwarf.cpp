// API tracing: signatures from DWARF debug information (dwarf.h).
#include "apitrace/dwarf.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include <cstring>

namespace sonde::apitrace {
namespace {

char *g_debuginfo_path = nullptr;  // libdwfl's default search path (/usr/lib/debug, build ids)

const Dwfl_Callbacks kOffline = {
    dwfl_build_id_find_elf,
    dwfl_standard_find_debuginfo,
    dwfl_offline_section_address,
    &g_debuginfo_path,
};

bool type_of(Dwarf_Die *die, Dwarf_Die *out) {
    Dwarf_Attribute a;
    return dwarf_attr_integrate(die, DW_AT_type, &a) != nullptr && dwarf_formref_die(&a, out) != nullptr;
}

std::string name_of(Dwarf_Die *die) {
    Dwarf_Attribute a;
    const char *n = dwarf_attr_integrate(die, DW_AT_name, &a) != nullptr ? dwarf_formstring(&a) : nullptr;
    return n != nullptr ? n : "";
}

bool is_qualifier(int tag) {
    return tag == DW_TAG_typedef || tag == DW_TAG_const_type || tag == DW_TAG_volatile_type ||
           tag == DW_TAG_restrict_type || tag == DW_TAG_atomic_type;
}

// Whether the pointee `die` is `const char` (through typedefs and qualifiers): such a pointer is
// a string.
bool const_char(Dwarf_Die die) {
    bool is_const = false;
    for (int step = 0; step < 64; ++step) {
        const int tag = dwarf_tag(&die);
        if (is_qualifier(tag)) {
            if (tag == DW_TAG_const_type) is_const = true;
            if (!type_of(&die, &die)) return false;  // const void
            continue;
        }
        if (tag != DW_TAG_base_type || !is_const) return false;
        Dwarf_Attribute a;
        Dwarf_Word enc = 0;
        if (dwarf_attr(&die, DW_AT_encoding, &a) == nullptr || dwarf_formudata(&a, &enc) != 0) return false;
        return (enc == DW_ATE_signed_char || enc == DW_ATE_unsigned_char) && dwarf_bytesize(&die) == 1 &&
               name_of(&die) == "char";
    }
    return false;
}

Type integer(int size, bool is_signed) {
    switch (size) {
        case 1: return is_signed ? Type::S8 : Type::U8;
        case 2: return is_signed ? Type::S16 : Type::U16;
        case 4: return is_signed ? Type::S32 : Type::U32;
        default: return is_signed ? Type::S64 : Type::U64;
    }
}

// The wrapper type of the type DIE `die` (nullptr: void). False with `why` set when it cannot
// be passed on.
bool resolve(Dwarf_Die *start, Type &out, std::string &why) {
    if (start == nullptr) {
        out = Type::Void;
        return true;
    }
    Dwarf_Die die = *start;
    for (int step = 0; step < 64; ++step) {
        const int tag = dwarf_tag(&die);
        if (is_qualifier(tag)) {
            if (!type_of(&die, &die)) {
                out = Type::Void;
                return true;
            }
            continue;
        }
        switch (tag) {
            case DW_TAG_pointer_type:
            case DW_TAG_reference_type:
            case DW_TAG_rvalue_reference_type: {
                Dwarf_Die pointee;
                out = tag == DW_TAG_pointer_type && type_of(&die, &pointee) && const_char(pointee)
                          ? Type::String
                          : Type::Pointer;
                return true;
            }
            case DW_TAG_enumeration_type: {
                Dwarf_Die underlying;
                if (type_of(&die, &underlying)) {
                    die = underlying;
                    continue;
                }
                const int size = dwarf_bytesize(&die);
                if (size != 1 && size != 2 && size != 4 && size != 8) break;
                out = integer(size, true);
                return true;
            }
            case DW_TAG_base_type: {
                Dwarf_Attribute a;
                Dwarf_Word enc = 0;
                if (dwarf_attr(&die, DW_AT_encoding, &a) == nullptr || dwarf_formudata(&a, &enc) != 0) break;
                const int size = dwarf_bytesize(&die);
                if (enc == DW_ATE_float) {
                    if (size == 4 || size == 8) {
                        out = size == 4 ? Type::Float : Type::Double;
                        return true;
                    }
                    why = "'" + name_of(&die) + "' (a " + std::to_string(size) +
                          "-byte float) cannot be passed on";
                    return false;
                }
                const bool is_signed = enc == DW_ATE_signed || enc == DW_ATE_signed_char;
                const bool is_unsigned = enc == DW_ATE_unsigned || enc == DW_ATE_unsigned_char ||
                                         enc == DW_ATE_boolean || enc == DW_ATE_UTF;
                if ((is_signed || is_unsigned) && (size == 1 || size == 2 || size == 4 || size == 8)) {
                    out = integer(size, is_signed);
                    return true;
                }
                why = "'" + name_of(&die) + "' (" + std::to_string(size) + " bytes) cannot be passed on";
                return false;
            }
            case DW_TAG_structure_type:
            case DW_TAG_union_type:
            case DW_TAG_class_type:
                why = "'" + name_of(&die) + "', a struct or union passed by value, cannot be passed on";
                return false;
            default: break;
        }
        why = "a type of DWARF tag " + std::to_string(tag) + " cannot be passed on";
        return false;
    }
    why = "its type is a chain of more than 64 typedefs and qualifiers";
    return false;
}

}  // namespace

DwarfSignatures::DwarfSignatures() = default;

DwarfSignatures::~DwarfSignatures() {
    if (dwfl_ != nullptr) dwfl_end(static_cast<Dwfl *>(dwfl_));
}

bool DwarfSignatures::open(const std::string &path, std::string &error) {
    Dwfl *dwfl = dwfl_begin(&kOffline);
    if (dwfl == nullptr) {
        error = path + ": libdw: " + dwfl_errmsg(-1);
        return false;
    }
    dwfl_report_begin(dwfl);
    Dwfl_Module *mod = dwfl_report_offline(dwfl, "", path.c_str(), -1);
    if (mod == nullptr) {
        error = path + ": " + dwfl_errmsg(-1);
        dwfl_end(dwfl);
        return false;
    }
    dwfl_report_end(dwfl, nullptr, nullptr);
    dwfl_ = dwfl;
    Dwarf_Addr bias = 0;
    dwarf_ = dwfl_module_getdwarf(mod, &bias);  // nullptr: no debug information anywhere
    if (dwarf_ != nullptr) {
        const char *main_file = nullptr, *debug_file = nullptr;
        dwfl_module_info(mod, nullptr, nullptr, nullptr, nullptr, nullptr, &main_file, &debug_file);
        debug_file_ = debug_file != nullptr ? debug_file : (main_file != nullptr ? main_file : path);
        index();
    }
    return true;
}

void DwarfSignatures::index() {
    Dwarf *dw = static_cast<Dwarf *>(dwarf_);
    Dwarf_Off off = 0, next = 0;
    size_t header = 0;
    while (dwarf_nextcu(dw, off, &next, &header, nullptr, nullptr, nullptr) == 0) {
        Dwarf_Die cu, die;
        if (dwarf_offdie(dw, off + header, &cu) != nullptr && dwarf_child(&cu, &die) == 0) {
            do {
                if (dwarf_tag(&die) != DW_TAG_subprogram) continue;
                const std::string name = name_of(&die);
                if (name.empty()) continue;
                const bool definition =
                    dwarf_hasattr(&die, DW_AT_low_pc) || dwarf_hasattr(&die, DW_AT_ranges);
                const bool external = dwarf_hasattr_integrate(&die, DW_AT_external) != 0;
                if (!definition && !external) continue;
                auto it = index_.find(name);
                // A definition of an exported function wins over a declaration, and over a
                // static function of the same name in another unit.
                if (it == index_.end())
                    index_.emplace(name, Entry{dwarf_dieoffset(&die), definition && external});
                else if (!it->second.definition && definition && external)
                    it->second = Entry{dwarf_dieoffset(&die), true};
            } while (dwarf_siblingof(&die, &die) == 0);
        }
        off = next;
    }
}

const Signature *DwarfSignatures::find(std::string_view name, std::string &error) {
    error.clear();
    if (auto made = made_.find(name); made != made_.end()) return &made->second;
    if (auto refused = refused_.find(name); refused != refused_.end()) {
        error = refused->second;
        return nullptr;
    }
    auto it = index_.find(name);
    if (it == index_.end()) return nullptr;
    Dwarf_Die die;
    if (dwarf_offdie(static_cast<Dwarf *>(dwarf_), it->second.offset, &die) == nullptr) return nullptr;
    // A concrete instance of an inlined function: its parameters are the origin's.
    Dwarf_Attribute a;
    Dwarf_Die origin;
    if (dwarf_attr(&die, DW_AT_abstract_origin, &a) != nullptr && dwarf_formref_die(&a, &origin) != nullptr)
        die = origin;

    Signature sig;
    sig.name = std::string(name);
    std::string why;
    Dwarf_Die ret;
    auto refuse = [&](const std::string &what) -> const Signature * {
        error = sig.name + ": " + what;
        refused_.emplace(sig.name, error);
        return nullptr;
    };
    if (!resolve(type_of(&die, &ret) ? &ret : nullptr, sig.ret, why)) return refuse("return type: " + why);
    Dwarf_Die child;
    if (dwarf_child(&die, &child) == 0) {
        do {
            const int tag = dwarf_tag(&child);
            if (tag == DW_TAG_unspecified_parameters) {
                sig.variadic = true;
                continue;
            }
            if (tag != DW_TAG_formal_parameter) continue;
            const size_t n = sig.args.size() + 1;
            std::string pname = name_of(&child);
            if (pname.empty()) pname = "arg" + std::to_string(n);
            Dwarf_Die ptype;
            Type t = Type::Void;
            if (!type_of(&child, &ptype))
                return refuse("parameter " + std::to_string(n) + " '" + pname + "' has no type");
            if (!resolve(&ptype, t, why))
                return refuse("parameter " + std::to_string(n) + " '" + pname + "': " + why);
            if (t == Type::Void) return refuse("parameter " + std::to_string(n) + " '" + pname + "' is void");
            if (sig.args.size() == kMaxArgs)
                return refuse("more than " + std::to_string(kMaxArgs) + " parameters cannot be passed on");
            sig.args.push_back(t);
            sig.arg_names.push_back(pname);
        } while (dwarf_siblingof(&child, &child) == 0);
    }
    return &made_.emplace(sig.name, std::move(sig)).first->second;
}

}  // namespace sonde::apitrace
