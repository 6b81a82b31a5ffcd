/* The layout of every struct of the public headers, pinned as literals: size, alignment, and
 * the offset and size of every field, for x86-64 (LP64), the only platform Sonde is built for.
 * Every check is a static assertion, so a layout change fails the build of this test. The same
 * source is compiled as C11 and as C++17 (test_struct_sizes.cpp includes it) to prove that both
 * languages see the same layout.
 *
 * The last part checks the pinned first-release sizes (SONDE_<STRUCT>_SIZE_<M>_<N>): each is a
 * literal the preprocessor can evaluate and equals the size the struct had in the release that
 * introduced it. When a struct grows, its LAYOUT line and the new FIELD lines change; the
 * PINNED lines never do. */
#include <stddef.h>

#include <sonde/sonde.h>

#ifdef __cplusplus
#define ABI_ASSERT(cond, what) static_assert(cond, what)
#define ABI_ALIGNOF(T) alignof(T)
#else
#define ABI_ASSERT(cond, what) _Static_assert(cond, what)
#define ABI_ALIGNOF(T) _Alignof(T)
#endif

/* The struct's size and alignment. */
#define LAYOUT(T, size, align)                         \
    ABI_ASSERT(sizeof(T) == (size), "sizeof(" #T ")"); \
    ABI_ASSERT(ABI_ALIGNOF(T) == (align), "alignment of " #T)
/* One field's offset and size. */
#define FIELD(T, f, offset, size)                                       \
    ABI_ASSERT(offsetof(T, f) == (offset), "offsetof(" #T ", " #f ")"); \
    ABI_ASSERT(sizeof(((T *)0)->f) == (size), "size of " #T "::" #f)
/* A pinned first-release size: the literal it must hold, and never more than today's sizeof. */
#define PINNED(macro, T, size)             \
    ABI_ASSERT((macro) == (size), #macro); \
    ABI_ASSERT((macro) <= sizeof(T), #macro " is at most sizeof(" #T ")")

ABI_ASSERT(sizeof(sonde_status_t) == 4, "sonde_status_t crosses the ABI as uint32_t");

/* defs.h: ids */
LAYOUT(sonde_session_id_t, 8, 8);
FIELD(sonde_session_id_t, handle, 0, 8);
LAYOUT(sonde_buffer_id_t, 8, 8);
FIELD(sonde_buffer_id_t, handle, 0, 8);

/* session.h */
LAYOUT(sonde_session_properties_t, 16, 8);
FIELD(sonde_session_properties_t, struct_size, 0, 4);
FIELD(sonde_session_properties_t, flags, 4, 4);
FIELD(sonde_session_properties_t, name, 8, 8);

/* record.h: the header and the record payloads */
LAYOUT(sonde_record_header_t, 8, 4);
FIELD(sonde_record_header_t, size, 0, 4);
FIELD(sonde_record_header_t, kind, 4, 2);
FIELD(sonde_record_header_t, flags, 6, 2);
LAYOUT(sonde_thread_record_t, 16, 8);
FIELD(sonde_thread_record_t, thread_id, 0, 8);
FIELD(sonde_thread_record_t, os_tid, 8, 8);
LAYOUT(sonde_loss_record_t, 32, 8);
FIELD(sonde_loss_record_t, count, 0, 8);
FIELD(sonde_loss_record_t, thread_id, 8, 8);
FIELD(sonde_loss_record_t, first_ns, 16, 8);
FIELD(sonde_loss_record_t, last_ns, 24, 8);
LAYOUT(sonde_tracer_record_t, 32, 8);
FIELD(sonde_tracer_record_t, begin_ns, 0, 8);
FIELD(sonde_tracer_record_t, end_ns, 8, 8);
FIELD(sonde_tracer_record_t, correlation_id, 16, 8);
FIELD(sonde_tracer_record_t, domain, 24, 4);
FIELD(sonde_tracer_record_t, operation, 28, 4);
LAYOUT(sonde_profiler_record_t, 24, 8);
FIELD(sonde_profiler_record_t, counter_id, 0, 8);
FIELD(sonde_profiler_record_t, value, 8, 8);
FIELD(sonde_profiler_record_t, timestamp_ns, 16, 8);
LAYOUT(sonde_memref_record_t, 24, 8);
FIELD(sonde_memref_record_t, address, 0, 8);
FIELD(sonde_memref_record_t, pc, 8, 8);
FIELD(sonde_memref_record_t, size, 16, 4);
FIELD(sonde_memref_record_t, type, 20, 4);
LAYOUT(sonde_call_record_t, 24, 8);
FIELD(sonde_call_record_t, method_id, 0, 8);
FIELD(sonde_call_record_t, timestamp_ns, 8, 8);
FIELD(sonde_call_record_t, event, 16, 4);
FIELD(sonde_call_record_t, reserved, 20, 4);

/* buffer.h */
LAYOUT(sonde_buffer_property_t, 16, 8);
FIELD(sonde_buffer_property_t, kind, 0, 4);
FIELD(sonde_buffer_property_t, reserved, 4, 4);
FIELD(sonde_buffer_property_t, value, 8, 8);
LAYOUT(sonde_buffer_stats_t, 56, 8);
FIELD(sonde_buffer_stats_t, struct_size, 0, 4);
FIELD(sonde_buffer_stats_t, reserved, 4, 4);
FIELD(sonde_buffer_stats_t, records_emitted, 8, 8);
FIELD(sonde_buffer_stats_t, records_delivered, 16, 8);
FIELD(sonde_buffer_stats_t, records_dropped, 24, 8);
FIELD(sonde_buffer_stats_t, bytes_delivered, 32, 8);
FIELD(sonde_buffer_stats_t, callbacks, 40, 8);
FIELD(sonde_buffer_stats_t, callback_failures, 48, 8);
/* 1.2: header-inline emission; sonde_writer_state_t is read by inlined code */
LAYOUT(sonde_producer_t, 40, 8);
FIELD(sonde_producer_t, struct_size, 0, 4);
FIELD(sonde_producer_t, reserved, 4, 4);
FIELD(sonde_producer_t, buffer, 8, 8);
FIELD(sonde_producer_t, writer, 16, 8);
FIELD(sonde_producer_t, state, 24, 8);
FIELD(sonde_producer_t, active, 32, 8);
LAYOUT(sonde_writer_state_t, 56, 8);
FIELD(sonde_writer_state_t, handle, 0, 8);
FIELD(sonde_writer_state_t, owner, 8, 8);
FIELD(sonde_writer_state_t, pos, 16, 8);
FIELD(sonde_writer_state_t, end, 24, 8);
FIELD(sonde_writer_state_t, base, 32, 8);
FIELD(sonde_writer_state_t, commit, 40, 8);
FIELD(sonde_writer_state_t, records, 48, 4);
FIELD(sonde_writer_state_t, busy, 52, 4);

/* profile.h: growable structs and the shared-memory layout */
LAYOUT(sonde_profile_allocator_t, 24, 8);
FIELD(sonde_profile_allocator_t, struct_size, 0, 4);
FIELD(sonde_profile_allocator_t, reserved, 4, 4);
FIELD(sonde_profile_allocator_t, context, 8, 8);
FIELD(sonde_profile_allocator_t, allocate, 16, 8);
LAYOUT(sonde_profile_view_t, 48, 8);
FIELD(sonde_profile_view_t, struct_size, 0, 4);
FIELD(sonde_profile_view_t, bucket, 4, 4);
FIELD(sonde_profile_view_t, bucket_base, 8, 8);
FIELD(sonde_profile_view_t, base, 16, 8);
FIELD(sonde_profile_view_t, chunk_size, 24, 8);
FIELD(sonde_profile_view_t, record_size, 32, 4);
FIELD(sonde_profile_view_t, num_records, 36, 4);
FIELD(sonde_profile_view_t, bucket_mask, 40, 4);
FIELD(sonde_profile_view_t, reserved, 44, 4);
LAYOUT(sonde_profile_shared_header_t, 64, 8);
FIELD(sonde_profile_shared_header_t, magic, 0, 8);
FIELD(sonde_profile_shared_header_t, version, 8, 4);
FIELD(sonde_profile_shared_header_t, header_size, 12, 4);
FIELD(sonde_profile_shared_header_t, size, 16, 8);
FIELD(sonde_profile_shared_header_t, bump, 24, 8);
FIELD(sonde_profile_shared_header_t, max_arrays, 32, 4);
FIELD(sonde_profile_shared_header_t, num_arrays, 36, 4);
FIELD(sonde_profile_shared_header_t, creator_pid, 40, 8);
FIELD(sonde_profile_shared_header_t, reserved, 48, 16);
LAYOUT(sonde_profile_shared_array_t, 64, 8);
FIELD(sonde_profile_shared_array_t, offset, 0, 8);
FIELD(sonde_profile_shared_array_t, size, 8, 8);
FIELD(sonde_profile_shared_array_t, record_size, 16, 4);
FIELD(sonde_profile_shared_array_t, num_records, 20, 4);
FIELD(sonde_profile_shared_array_t, num_thread_buckets, 24, 4);
FIELD(sonde_profile_shared_array_t, chunk_size, 28, 4);
FIELD(sonde_profile_shared_array_t, alignment, 32, 4);
FIELD(sonde_profile_shared_array_t, reserved0, 36, 4);
FIELD(sonde_profile_shared_array_t, reserved, 40, 24);

/* trace.h */
LAYOUT(sonde_memref_t, 32, 8);
FIELD(sonde_memref_t, address, 0, 8);
FIELD(sonde_memref_t, pc, 8, 8);
FIELD(sonde_memref_t, timestamp, 16, 8);
FIELD(sonde_memref_t, shard, 24, 4);
FIELD(sonde_memref_t, type, 28, 2);
FIELD(sonde_memref_t, size, 30, 2);
LAYOUT(sonde_trace_writer_properties_t, 16, 4);
FIELD(sonde_trace_writer_properties_t, struct_size, 0, 4);
FIELD(sonde_trace_writer_properties_t, compression_level, 4, 4);
FIELD(sonde_trace_writer_properties_t, chunk_records, 8, 4);
FIELD(sonde_trace_writer_properties_t, reserved, 12, 4);

/* analysis.h: the tool function table */
LAYOUT(sonde_tool_ops_t, 192, 8);
FIELD(sonde_tool_ops_t, struct_size, 0, 4);
FIELD(sonde_tool_ops_t, reserved, 4, 4);
FIELD(sonde_tool_ops_t, name, 8, 8);
FIELD(sonde_tool_ops_t, initialize, 16, 8);
FIELD(sonde_tool_ops_t, process_memref, 24, 8);
FIELD(sonde_tool_ops_t, print_results, 32, 8);
FIELD(sonde_tool_ops_t, parallel_shard_supported, 40, 8);
FIELD(sonde_tool_ops_t, parallel_worker_init, 48, 8);
FIELD(sonde_tool_ops_t, parallel_worker_exit, 56, 8);
FIELD(sonde_tool_ops_t, parallel_shard_init, 64, 8);
FIELD(sonde_tool_ops_t, parallel_shard_memref, 72, 8);
FIELD(sonde_tool_ops_t, parallel_shard_exit, 80, 8);
FIELD(sonde_tool_ops_t, parallel_shard_error, 88, 8);
FIELD(sonde_tool_ops_t, get_error_string, 96, 8);
FIELD(sonde_tool_ops_t, process_memrefs, 104, 8);
FIELD(sonde_tool_ops_t, parallel_shard_memrefs, 112, 8);
FIELD(sonde_tool_ops_t, results_json, 120, 8);
FIELD(sonde_tool_ops_t, destroy, 128, 8);
FIELD(sonde_tool_ops_t, memref_model, 136, 8); /* appended in 1.2 */
FIELD(sonde_tool_ops_t, partition, 144, 8);    /* appended in 1.2 */
FIELD(sonde_tool_ops_t, slice_begin, 152, 8);
FIELD(sonde_tool_ops_t, export_state, 160, 8);
FIELD(sonde_tool_ops_t, merge_state, 168, 8);
FIELD(sonde_tool_ops_t, parallel_shard_pieces, 176, 8);
FIELD(sonde_tool_ops_t, add_shards, 184, 8); /* appended in 1.2 */

/* stackdist.h */
LAYOUT(sonde_stackdist_options_t, 48, 8);
FIELD(sonde_stackdist_options_t, struct_size, 0, 4);
FIELD(sonde_stackdist_options_t, flags, 4, 4);
FIELD(sonde_stackdist_options_t, initial_capacity, 8, 8);
FIELD(sonde_stackdist_options_t, sampling, 16, 4);
FIELD(sonde_stackdist_options_t, workers, 20, 4);
FIELD(sonde_stackdist_options_t, sample_rate, 24, 8);
FIELD(sonde_stackdist_options_t, sample_size, 32, 8);
FIELD(sonde_stackdist_options_t, seed, 40, 8);
LAYOUT(sonde_histogram_summary_t, 80, 8);
FIELD(sonde_histogram_summary_t, struct_size, 0, 4);
FIELD(sonde_histogram_summary_t, sampling, 4, 4);
FIELD(sonde_histogram_summary_t, accesses, 8, 8);
FIELD(sonde_histogram_summary_t, reads, 16, 8);
FIELD(sonde_histogram_summary_t, writes, 24, 8);
FIELD(sonde_histogram_summary_t, infinite, 32, 8);
FIELD(sonde_histogram_summary_t, infinite_reads, 40, 8);
FIELD(sonde_histogram_summary_t, infinite_writes, 48, 8);
FIELD(sonde_histogram_summary_t, sampled, 56, 8);
FIELD(sonde_histogram_summary_t, sample_rate, 64, 8);
FIELD(sonde_histogram_summary_t, max_distance, 72, 8);
LAYOUT(sonde_histogram_bin_t, 40, 8);
FIELD(sonde_histogram_bin_t, first, 0, 8);
FIELD(sonde_histogram_bin_t, last, 8, 8);
FIELD(sonde_histogram_bin_t, count, 16, 8);
FIELD(sonde_histogram_bin_t, reads, 24, 8);
FIELD(sonde_histogram_bin_t, writes, 32, 8);
LAYOUT(sonde_mrc_point_t, 16, 8);
FIELD(sonde_mrc_point_t, cache_lines, 0, 8);
FIELD(sonde_mrc_point_t, miss_ratio, 8, 8);

/* client.h (1.1): ids, event data, filter elements, arrays, info structs, the function table */
LAYOUT(sonde_client_id_t, 8, 8);
FIELD(sonde_client_id_t, handle, 0, 8);
LAYOUT(sonde_method_id_t, 8, 8);
FIELD(sonde_method_id_t, handle, 0, 8);
LAYOUT(sonde_thread_id_t, 8, 8);
FIELD(sonde_thread_id_t, handle, 0, 8);
LAYOUT(sonde_module_id_t, 8, 8);
FIELD(sonde_module_id_t, handle, 0, 8);
LAYOUT(sonde_api_function_id_t, 8, 8);
FIELD(sonde_api_function_id_t, handle, 0, 8);
LAYOUT(sonde_event_data_t, 168, 8);
FIELD(sonde_event_data_t, struct_size, 0, 4);
FIELD(sonde_event_data_t, event, 4, 4);
FIELD(sonde_event_data_t, valid_items, 8, 8);
FIELD(sonde_event_data_t, method, 16, 8);
FIELD(sonde_event_data_t, thread, 24, 8);
FIELD(sonde_event_data_t, module, 32, 8);
FIELD(sonde_event_data_t, session, 40, 8);
FIELD(sonde_event_data_t, timestamp, 48, 8);
FIELD(sonde_event_data_t, call_site, 56, 8);
FIELD(sonde_event_data_t, address, 64, 8);
FIELD(sonde_event_data_t, size, 72, 8);
FIELD(sonde_event_data_t, os_thread_id, 80, 8);
FIELD(sonde_event_data_t, stack_depth, 88, 4);
FIELD(sonde_event_data_t, access_type, 92, 4);
FIELD(sonde_event_data_t, name, 96, 8);
FIELD(sonde_event_data_t, payload, 104, 8);
FIELD(sonde_event_data_t, payload_size, 112, 8);
FIELD(sonde_event_data_t, api_function, 120, 8);
FIELD(sonde_event_data_t, correlation_id, 128, 8);
FIELD(sonde_event_data_t, begin_timestamp, 136, 8);
FIELD(sonde_event_data_t, return_value, 144, 8);
FIELD(sonde_event_data_t, arguments, 152, 8);
FIELD(sonde_event_data_t, argument_count, 160, 4);
FIELD(sonde_event_data_t, reserved2, 164, 4);
LAYOUT(sonde_filter_element_t, 88, 8);
FIELD(sonde_filter_element_t, struct_size, 0, 4);
FIELD(sonde_filter_element_t, group, 4, 4);
FIELD(sonde_filter_element_t, method, 8, 8);
FIELD(sonde_filter_element_t, thread, 16, 8);
FIELD(sonde_filter_element_t, module, 24, 8);
FIELD(sonde_filter_element_t, name, 32, 8);
FIELD(sonde_filter_element_t, class_name, 40, 8);
FIELD(sonde_filter_element_t, full_name, 48, 8);
FIELD(sonde_filter_element_t, module_name, 56, 8);
FIELD(sonde_filter_element_t, path, 64, 8);
FIELD(sonde_filter_element_t, visibility, 72, 4);
FIELD(sonde_filter_element_t, reserved, 76, 4);
FIELD(sonde_filter_element_t, api_function, 80, 8);
LAYOUT(sonde_string_t, 16, 8);
FIELD(sonde_string_t, entries, 0, 8);
FIELD(sonde_string_t, size, 8, 4);
FIELD(sonde_string_t, actual_size, 12, 4);
LAYOUT(sonde_method_array_t, 16, 8);
FIELD(sonde_method_array_t, entries, 0, 8);
FIELD(sonde_method_array_t, size, 8, 4);
FIELD(sonde_method_array_t, actual_size, 12, 4);
LAYOUT(sonde_thread_array_t, 16, 8);
FIELD(sonde_thread_array_t, entries, 0, 8);
FIELD(sonde_thread_array_t, size, 8, 4);
FIELD(sonde_thread_array_t, actual_size, 12, 4);
LAYOUT(sonde_module_array_t, 16, 8);
FIELD(sonde_module_array_t, entries, 0, 8);
FIELD(sonde_module_array_t, size, 8, 4);
FIELD(sonde_module_array_t, actual_size, 12, 4);
LAYOUT(sonde_client_array_t, 16, 8);
FIELD(sonde_client_array_t, entries, 0, 8);
FIELD(sonde_client_array_t, size, 8, 4);
FIELD(sonde_client_array_t, actual_size, 12, 4);
LAYOUT(sonde_method_info_t, 128, 8);
FIELD(sonde_method_info_t, struct_size, 0, 4);
FIELD(sonde_method_info_t, visibility, 4, 4);
FIELD(sonde_method_info_t, valid_items, 8, 8);
FIELD(sonde_method_info_t, name, 16, 16);
FIELD(sonde_method_info_t, class_name, 32, 16);
FIELD(sonde_method_info_t, full_name, 48, 16);
FIELD(sonde_method_info_t, mangled_name, 64, 16);
FIELD(sonde_method_info_t, source_file, 80, 16);
FIELD(sonde_method_info_t, source_line, 96, 4);
FIELD(sonde_method_info_t, reserved, 100, 4);
FIELD(sonde_method_info_t, module, 104, 8);
FIELD(sonde_method_info_t, address, 112, 8);
FIELD(sonde_method_info_t, size, 120, 8);
LAYOUT(sonde_module_info_t, 64, 8);
FIELD(sonde_module_info_t, struct_size, 0, 4);
FIELD(sonde_module_info_t, loaded, 4, 4);
FIELD(sonde_module_info_t, valid_items, 8, 8);
FIELD(sonde_module_info_t, name, 16, 16);
FIELD(sonde_module_info_t, path, 32, 16);
FIELD(sonde_module_info_t, address, 48, 8);
FIELD(sonde_module_info_t, size, 56, 8);
LAYOUT(sonde_thread_info_t, 48, 8);
FIELD(sonde_thread_info_t, struct_size, 0, 4);
FIELD(sonde_thread_info_t, alive, 4, 4);
FIELD(sonde_thread_info_t, valid_items, 8, 8);
FIELD(sonde_thread_info_t, name, 16, 16);
FIELD(sonde_thread_info_t, os_thread_id, 32, 8);
FIELD(sonde_thread_info_t, stack_depth, 40, 4);
FIELD(sonde_thread_info_t, reserved, 44, 4);
LAYOUT(sonde_client_info_t, 48, 8);
FIELD(sonde_client_info_t, struct_size, 0, 4);
FIELD(sonde_client_info_t, state, 4, 4);
FIELD(sonde_client_info_t, status, 8, 4);
FIELD(sonde_client_info_t, reserved, 12, 4);
FIELD(sonde_client_info_t, path, 16, 16);
FIELD(sonde_client_info_t, message, 32, 16);
LAYOUT(sonde_api_t, 104, 8);
FIELD(sonde_api_t, struct_size, 0, 4);
FIELD(sonde_api_t, abi_version, 4, 4);
FIELD(sonde_api_t, register_event, 8, 8);
FIELD(sonde_api_t, set_event_group_filter, 16, 8);
FIELD(sonde_api_t, get_method_info, 24, 8);
FIELD(sonde_api_t, get_module_info, 32, 8);
FIELD(sonde_api_t, get_thread_info, 40, 8);
FIELD(sonde_api_t, get_thread_stack, 48, 8);
FIELD(sonde_api_t, get_module_list, 56, 8);
FIELD(sonde_api_t, get_thread_list, 64, 8);
FIELD(sonde_api_t, status_name, 72, 8);
FIELD(sonde_api_t, status_string, 80, 8);
FIELD(sonde_api_t, get_timestamp, 88, 8);
FIELD(sonde_api_t, set_message, 96, 8);

/* 1.2: program events in traces (trace_events.h) */
LAYOUT(sonde_trace_event_t, 32, 8);
FIELD(sonde_trace_event_t, timestamp, 0, 8);
FIELD(sonde_trace_event_t, value, 8, 8);
FIELD(sonde_trace_event_t, id, 16, 4);
FIELD(sonde_trace_event_t, shard, 20, 4);
FIELD(sonde_trace_event_t, kind, 24, 4);
FIELD(sonde_trace_event_t, aux, 28, 4);
LAYOUT(sonde_trace_method_t, 80, 8);
FIELD(sonde_trace_method_t, struct_size, 0, 4);
FIELD(sonde_trace_method_t, index, 4, 4);
FIELD(sonde_trace_method_t, name, 8, 8);
FIELD(sonde_trace_method_t, class_name, 16, 8);
FIELD(sonde_trace_method_t, full_name, 24, 8);
FIELD(sonde_trace_method_t, mangled_name, 32, 8);
FIELD(sonde_trace_method_t, source_file, 40, 8);
FIELD(sonde_trace_method_t, source_line, 48, 4);
FIELD(sonde_trace_method_t, module, 52, 4);
FIELD(sonde_trace_method_t, address, 56, 8);
FIELD(sonde_trace_method_t, size, 64, 8);
FIELD(sonde_trace_method_t, visibility, 72, 4);
FIELD(sonde_trace_method_t, reserved, 76, 4);
LAYOUT(sonde_trace_module_t, 40, 8);
FIELD(sonde_trace_module_t, struct_size, 0, 4);
FIELD(sonde_trace_module_t, index, 4, 4);
FIELD(sonde_trace_module_t, path, 8, 8);
FIELD(sonde_trace_module_t, name, 16, 8);
FIELD(sonde_trace_module_t, address, 24, 8);
FIELD(sonde_trace_module_t, size, 32, 8);
LAYOUT(sonde_trace_line_t, 40, 8);
FIELD(sonde_trace_line_t, struct_size, 0, 4);
FIELD(sonde_trace_line_t, module, 4, 4);
FIELD(sonde_trace_line_t, address, 8, 8);
FIELD(sonde_trace_line_t, size, 16, 8);
FIELD(sonde_trace_line_t, file, 24, 8);
FIELD(sonde_trace_line_t, line, 32, 4);
FIELD(sonde_trace_line_t, column, 36, 4);
LAYOUT(sonde_trace_thread_t, 24, 8);
FIELD(sonde_trace_thread_t, struct_size, 0, 4);
FIELD(sonde_trace_thread_t, shard, 4, 4);
FIELD(sonde_trace_thread_t, os_thread_id, 8, 8);
FIELD(sonde_trace_thread_t, name, 16, 8);
LAYOUT(sonde_trace_event_info_t, 48, 8);
FIELD(sonde_trace_event_info_t, struct_size, 0, 4);
FIELD(sonde_trace_event_info_t, num_shards, 4, 4);
FIELD(sonde_trace_event_info_t, num_events, 8, 8);
FIELD(sonde_trace_event_info_t, num_methods, 16, 4);
FIELD(sonde_trace_event_info_t, num_modules, 20, 4);
FIELD(sonde_trace_event_info_t, num_strings, 24, 4);
FIELD(sonde_trace_event_info_t, num_threads, 28, 4);
FIELD(sonde_trace_event_info_t, first_timestamp, 32, 8);
FIELD(sonde_trace_event_info_t, last_timestamp, 40, 8);

/* The pinned first-release sizes. The #if lines prove that each macro is a literal: a sizeof
 * expression cannot be evaluated by the preprocessor. */
#if SONDE_SESSION_PROPERTIES_SIZE_1_0 != 16 || SONDE_BUFFER_STATS_SIZE_1_0 != 56 ||   \
    SONDE_PROFILE_ALLOCATOR_SIZE_1_0 != 24 || SONDE_PROFILE_VIEW_SIZE_1_0 != 48 ||    \
    SONDE_TRACE_WRITER_PROPERTIES_SIZE_1_0 != 16 || SONDE_TOOL_OPS_SIZE_1_0 != 136 || \
    SONDE_TOOL_OPS_MIN_SIZE != 136 || SONDE_STACKDIST_OPTIONS_SIZE_1_0 != 48 ||       \
    SONDE_HISTOGRAM_SUMMARY_SIZE_1_0 != 80
#error "a 1.0 size macro is not the literal size of its struct in 1.0"
#endif
#if SONDE_EVENT_DATA_SIZE_1_1 != 120 || SONDE_FILTER_ELEMENT_SIZE_1_1 != 80 || \
    SONDE_METHOD_INFO_SIZE_1_1 != 128 || SONDE_MODULE_INFO_SIZE_1_1 != 64 ||   \
    SONDE_THREAD_INFO_SIZE_1_1 != 48 || SONDE_CLIENT_INFO_SIZE_1_1 != 48 || SONDE_API_SIZE_1_1 != 104
#error "a 1.1 size macro is not the literal size of its struct in 1.1"
#endif
#if SONDE_TRACE_METHOD_SIZE_1_2 != 80 || SONDE_TRACE_MODULE_SIZE_1_2 != 40 ||                            \
    SONDE_TRACE_THREAD_SIZE_1_2 != 24 || SONDE_TRACE_EVENT_INFO_SIZE_1_2 != 48 ||                        \
    SONDE_EVENT_COUNT_1_1 != 14 || SONDE_TOOL_OPS_SIZE_1_2 != 192 || SONDE_EVENT_DATA_SIZE_1_2 != 168 || \
    SONDE_FILTER_ELEMENT_SIZE_1_2 != 88 || SONDE_EVENT_GROUP_COUNT_1_1 != 6 ||                           \
    SONDE_PRODUCER_SIZE_1_2 != 40 || SONDE_TRACE_LINE_SIZE_1_2 != 40
#error "a 1.2 size macro is not the literal size of its struct in 1.2"
#endif

/* 1.0 */
PINNED(SONDE_SESSION_PROPERTIES_SIZE_1_0, sonde_session_properties_t, 16);
PINNED(SONDE_BUFFER_STATS_SIZE_1_0, sonde_buffer_stats_t, 56);
PINNED(SONDE_PROFILE_ALLOCATOR_SIZE_1_0, sonde_profile_allocator_t, 24);
PINNED(SONDE_PROFILE_VIEW_SIZE_1_0, sonde_profile_view_t, 48);
PINNED(SONDE_TRACE_WRITER_PROPERTIES_SIZE_1_0, sonde_trace_writer_properties_t, 16);
PINNED(SONDE_TOOL_OPS_SIZE_1_0, sonde_tool_ops_t, 136);
PINNED(SONDE_TOOL_OPS_MIN_SIZE, sonde_tool_ops_t, 136);
PINNED(SONDE_STACKDIST_OPTIONS_SIZE_1_0, sonde_stackdist_options_t, 48);
PINNED(SONDE_HISTOGRAM_SUMMARY_SIZE_1_0, sonde_histogram_summary_t, 80);
/* 1.1: the client API */
PINNED(SONDE_EVENT_DATA_SIZE_1_1, sonde_event_data_t, 120);
PINNED(SONDE_FILTER_ELEMENT_SIZE_1_1, sonde_filter_element_t, 80);
PINNED(SONDE_METHOD_INFO_SIZE_1_1, sonde_method_info_t, 128);
PINNED(SONDE_MODULE_INFO_SIZE_1_1, sonde_module_info_t, 64);
PINNED(SONDE_THREAD_INFO_SIZE_1_1, sonde_thread_info_t, 48);
PINNED(SONDE_CLIENT_INFO_SIZE_1_1, sonde_client_info_t, 48);
PINNED(SONDE_API_SIZE_1_1, sonde_api_t, 104);
/* 1.2: program events in traces */
PINNED(SONDE_TRACE_METHOD_SIZE_1_2, sonde_trace_method_t, 80);
PINNED(SONDE_TRACE_MODULE_SIZE_1_2, sonde_trace_module_t, 40);
PINNED(SONDE_TRACE_THREAD_SIZE_1_2, sonde_trace_thread_t, 24);
PINNED(SONDE_TRACE_EVENT_INFO_SIZE_1_2, sonde_trace_event_info_t, 48);
PINNED(SONDE_TRACE_LINE_SIZE_1_2, sonde_trace_line_t, 40);
/* 1.2: API_CALL client events */
PINNED(SONDE_EVENT_DATA_SIZE_1_2, sonde_event_data_t, 168);
PINNED(SONDE_FILTER_ELEMENT_SIZE_1_2, sonde_filter_element_t, 88);
/* 1.2: header-inline emission */
PINNED(SONDE_PRODUCER_SIZE_1_2, sonde_producer_t, 40);

/* Every check above runs at compile time; reaching main means the layout holds. */
int main(void) { return 0; }
