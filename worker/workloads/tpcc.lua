-- galera-doe tpcc: a TPC-C-like workload for sysbench 1.0.20. It is NOT an audited TPC-C and
-- its results are not TPC-C results: it follows the public facts of the TPC-C specification
-- (the nine tables, the five transactions and their mix 45/43/4/4/4, one new-order in a
-- hundred rolled back by an unused item number, 1 % remote order lines, 15 % remote payments,
-- 60 % of customers picked by last name, NURand skew), with keying and think times off, no
-- terminals (every sysbench thread picks a random home warehouse for each transaction), no
-- result checking, and an optional reduced scale.
--
-- Written for this project; it shares nothing with sysbench's oltp scripts.
--
-- Options: --warehouses (W), --tpcc_scale (1 = the specification's cardinalities: 100 000
-- items and stock rows per warehouse, 3 000 customers and orders per district; N divides
-- items, customers and orders by N, so that a lab prepare takes seconds), --tpcc_warmup
-- (seconds at the start whose transactions are not counted, as sysbench's warm-up).
--
-- `prepare` creates and fills the nine tables for W warehouses. `run` executes the mix; at the
-- end every thread prints one line
--   tpcc-counts: new_order=N rolled_back=N payment=N order_status=N delivery=N stock_level=N
--   elapsed=S latency_buckets=b:n,b:n,...
-- (the transactions committed after the warm-up, and the new-order latencies as counts per
-- bucket, bucket b covering [1.02^(b-1), 1.02^b) microseconds), which galera-doe sums over the
-- threads to report NOTPM, the rollback rate and the new-order p95 latency.

local ffi = require("ffi")
ffi.cdef [[
typedef long time_t;
typedef struct timespec { time_t tv_sec; long tv_nsec; } timespec;
int clock_gettime(int clk_id, struct timespec *tp);
]]
local CLOCK_MONOTONIC = 1

sysbench.cmdline.options = {
   warehouses = {"Number of warehouses", 1},
   tpcc_scale = {"Divide items, customers and orders by this (1 = full TPC-C scale)", 1},
   tpcc_warmup = {"Seconds at the start whose transactions are not counted", 0},
   -- Accepted and ignored: galera-doe passes the oltp table settings to every workload.
   tables = {"Ignored (the oltp workloads' number of tables)", 1},
   table_size = {"Ignored (the oltp workloads' rows per table)", 1},
}

local DISTRICTS = 10
local BUCKET_RATIO = 1.02

local function now()
   local t = ffi.new("timespec")
   ffi.C.clock_gettime(CLOCK_MONOTONIC, t)
   return tonumber(t.tv_sec) + tonumber(t.tv_nsec) * 1e-9
end

local function sizes()
   local scale = math.max(1, sysbench.opt.tpcc_scale)
   return {
      items = math.max(100, math.floor(100000 / scale)),
      customers = math.max(30, math.floor(3000 / scale)),
      new_orders = math.max(9, math.floor(900 / scale)),
   }
end

local function random(low, high)
   return sysbench.rand.uniform(low, high)
end

-- NURand(A, x, y) of the specification; A shrinks with a reduced range so the skew stays.
local C_LAST, C_ID, OL_I_ID = 123, 259, 7911
local function nurand(a, c, x, y)
   local range = y - x + 1
   while a > range do a = math.floor(a / 2) end
   return (bit.bor(random(0, a), random(x, y)) + c) % range + x
end

local SYLLABLES = {"BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"}
local function last_name(number)
   return SYLLABLES[math.floor(number / 100) % 10 + 1] ..
      SYLLABLES[math.floor(number / 10) % 10 + 1] .. SYLLABLES[number % 10 + 1]
end

local function text(length)
   return sysbench.rand.string(string.rep("@", length))
end

-- prepare ---------------------------------------------------------------------------------

local SCHEMA = {
   [[CREATE TABLE warehouse (w_id INT PRIMARY KEY, w_name VARCHAR(10), w_tax DECIMAL(4,4),
      w_ytd DECIMAL(12,2))]],
   [[CREATE TABLE district (d_w_id INT, d_id INT, d_name VARCHAR(10), d_tax DECIMAL(4,4),
      d_ytd DECIMAL(12,2), d_next_o_id INT, PRIMARY KEY (d_w_id, d_id))]],
   [[CREATE TABLE customer (c_w_id INT, c_d_id INT, c_id INT, c_first VARCHAR(16),
      c_last VARCHAR(16), c_credit CHAR(2), c_discount DECIMAL(4,4), c_balance DECIMAL(12,2),
      c_ytd_payment DECIMAL(12,2), c_payment_cnt INT, c_delivery_cnt INT, c_data VARCHAR(500),
      PRIMARY KEY (c_w_id, c_d_id, c_id), KEY by_last (c_w_id, c_d_id, c_last, c_first))]],
   [[CREATE TABLE history (h_id BIGINT AUTO_INCREMENT PRIMARY KEY, h_c_id INT, h_c_d_id INT,
      h_c_w_id INT, h_d_id INT, h_w_id INT, h_date DATETIME, h_amount DECIMAL(6,2),
      h_data VARCHAR(24))]],
   [[CREATE TABLE orders (o_w_id INT, o_d_id INT, o_id INT, o_c_id INT, o_entry_d DATETIME,
      o_carrier_id INT, o_ol_cnt INT, o_all_local INT, PRIMARY KEY (o_w_id, o_d_id, o_id),
      KEY by_customer (o_w_id, o_d_id, o_c_id, o_id))]],
   [[CREATE TABLE new_orders (no_w_id INT, no_d_id INT, no_o_id INT,
      PRIMARY KEY (no_w_id, no_d_id, no_o_id))]],
   [[CREATE TABLE order_line (ol_w_id INT, ol_d_id INT, ol_o_id INT, ol_number INT,
      ol_i_id INT, ol_supply_w_id INT, ol_delivery_d DATETIME, ol_quantity INT,
      ol_amount DECIMAL(6,2), ol_dist_info CHAR(24),
      PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number))]],
   [[CREATE TABLE item (i_id INT PRIMARY KEY, i_im_id INT, i_name VARCHAR(24),
      i_price DECIMAL(5,2), i_data VARCHAR(50))]],
   [[CREATE TABLE stock (s_w_id INT, s_i_id INT, s_quantity INT, s_ytd INT, s_order_cnt INT,
      s_remote_cnt INT, s_dist_info CHAR(24), s_data VARCHAR(50), PRIMARY KEY (s_w_id, s_i_id))]],
}

-- Rows go in as multi-row INSERTs of this many rows.
local BATCH = 500

local function inserter(con, head)
   local rows = {}
   local self = {}
   function self.add(row)
      rows[#rows + 1] = row
      if #rows >= BATCH then self.flush() end
   end
   function self.flush()
      if #rows > 0 then
         con:query(head .. table.concat(rows, ","))
         rows = {}
      end
   end
   return self
end

local function load_warehouse(con, w, size)
   con:query(string.format("INSERT INTO warehouse VALUES (%d, 'w%d', %.4f, 300000.00)",
                           w, w, random(0, 2000) / 10000))
   local stock = inserter(con, "INSERT INTO stock VALUES ")
   for i = 1, size.items do
      stock.add(string.format("(%d,%d,%d,0,0,0,'%s','%s')", w, i, random(10, 100), text(24),
                              text(30)))
   end
   stock.flush()
   for d = 1, DISTRICTS do
      con:query(string.format(
                   "INSERT INTO district VALUES (%d, %d, 'd%d', %.4f, 30000.00, %d)",
                   w, d, d, random(0, 2000) / 10000, size.customers + 1))
      local customers = inserter(con, "INSERT INTO customer VALUES ")
      local history = inserter(con, "INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, " ..
                                  "h_d_id, h_w_id, h_date, h_amount, h_data) VALUES ")
      for c = 1, size.customers do
         local name = c <= 1000 and last_name(c - 1) or last_name(nurand(255, C_LAST, 0, 999))
         local credit = random(1, 10) == 1 and "BC" or "GC"
         customers.add(string.format(
                          "(%d,%d,%d,'%s','%s','%s',%.4f,-10.00,10.00,1,0,'%s')",
                          w, d, c, text(12), name, credit, random(0, 5000) / 10000, text(60)))
         history.add(string.format("(%d,%d,%d,%d,%d,NOW(),10.00,'%s')", c, d, w, d, w,
                                   text(12)))
      end
      customers.flush()
      history.flush()
      -- One order per customer, in a random customer order; the last ones are still new.
      local orders = inserter(con, "INSERT INTO orders VALUES ")
      local lines = inserter(con, "INSERT INTO order_line VALUES ")
      local news = inserter(con, "INSERT INTO new_orders VALUES ")
      local first_new = size.customers - size.new_orders + 1
      for o = 1, size.customers do
         local delivered = o < first_new
         local count = random(5, 15)
         orders.add(string.format("(%d,%d,%d,%d,NOW(),%s,%d,1)", w, d, o,
                                  random(1, size.customers),
                                  delivered and tostring(random(1, 10)) or "NULL", count))
         for n = 1, count do
            lines.add(string.format("(%d,%d,%d,%d,%d,%d,%s,5,%.2f,'%s')", w, d, o, n,
                                    random(1, size.items), w,
                                    delivered and "NOW()" or "NULL",
                                    delivered and 0 or random(1, 999999) / 100, text(24)))
         end
         if not delivered then news.add(string.format("(%d,%d,%d)", w, d, o)) end
      end
      orders.flush()
      lines.flush()
      news.flush()
   end
end

local function cmd_prepare()
   local con = sysbench.sql.driver():connect()
   local size = sizes()
   for _, statement in ipairs(SCHEMA) do con:query(statement) end
   local items = inserter(con, "INSERT INTO item VALUES ")
   for i = 1, size.items do
      local data = random(1, 10) == 1 and ("ORIGINAL" .. text(20)) or text(30)
      items.add(string.format("(%d,%d,'%s',%.2f,'%s')", i, random(1, 10000), text(14),
                              random(100, 10000) / 100, data))
   end
   items.flush()
   for w = 1, sysbench.opt.warehouses do load_warehouse(con, w, size) end
   con:disconnect()
end

local function cmd_cleanup()
   local con = sysbench.sql.driver():connect()
   for _, name in ipairs({"warehouse", "district", "customer", "history", "orders",
                          "new_orders", "order_line", "item", "stock"}) do
      con:query("DROP TABLE IF EXISTS " .. name)
   end
   con:disconnect()
end

sysbench.cmdline.commands = {
   prepare = {cmd_prepare},
   cleanup = {cmd_cleanup},
}

-- run -------------------------------------------------------------------------------------

local counts, buckets, started

function thread_init()
   con = sysbench.sql.driver():connect()
   size = sizes()
   counts = {new_order = 0, rolled_back = 0, payment = 0, order_status = 0, delivery = 0,
             stock_level = 0}
   buckets = {}
   started = now()
end

local function counted(name)
   if now() - started >= sysbench.opt.tpcc_warmup then counts[name] = counts[name] + 1 end
end

local function first_value(statement)
   local result = con:query(statement)
   if result == nil or result.nrows == 0 then return nil end
   local row = result:fetch_row()
   return row[1]
end

local function customer_id(w, d)
   if random(1, 100) <= 60 then
      local name = last_name(nurand(255, C_LAST, 0, 999))
      local result = con:query(string.format(
         "SELECT c_id FROM customer WHERE c_w_id = %d AND c_d_id = %d AND c_last = '%s' " ..
            "ORDER BY c_first", w, d, name))
      if result.nrows > 0 then
         local ids = {}
         for _ = 1, result.nrows do ids[#ids + 1] = result:fetch_row()[1] end
         return ids[math.floor((#ids + 1) / 2)]
      end
   end
   return nurand(1023, C_ID, 1, size.customers)
end

local function new_order(w)
   local d = random(1, DISTRICTS)
   local c = nurand(1023, C_ID, 1, size.customers)
   local count = random(5, 15)
   local unused = random(1, 100) == 1
   local clock = now()
   con:query("BEGIN")
   first_value(string.format("SELECT w_tax FROM warehouse WHERE w_id = %d", w))
   local o = tonumber(first_value(string.format(
      "SELECT d_next_o_id FROM district WHERE d_w_id = %d AND d_id = %d FOR UPDATE", w, d)))
   con:query(string.format(
      "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = %d AND d_id = %d",
      w, d))
   first_value(string.format("SELECT c_discount FROM customer WHERE c_w_id = %d AND " ..
                                "c_d_id = %d AND c_id = %d", w, d, c))
   local all_local = 1
   local lines = {}
   for n = 1, count do
      local supply = w
      if sysbench.opt.warehouses > 1 and random(1, 100) == 1 then
         repeat supply = random(1, sysbench.opt.warehouses) until supply ~= w
         all_local = 0
      end
      local item = (unused and n == count) and size.items + 1
         or nurand(8191, OL_I_ID, 1, size.items)
      lines[n] = {item = item, supply = supply, quantity = random(1, 10)}
   end
   con:query(string.format("INSERT INTO orders VALUES (%d,%d,%d,%d,NOW(),NULL,%d,%d)",
                           w, d, o, c, count, all_local))
   con:query(string.format("INSERT INTO new_orders VALUES (%d,%d,%d)", w, d, o))
   for n, line in ipairs(lines) do
      local price = first_value(string.format("SELECT i_price FROM item WHERE i_id = %d",
                                              line.item))
      if price == nil then
         -- The specification's 1 %: an unused item number rolls the whole order back.
         con:query("ROLLBACK")
         counted("rolled_back")
         return
      end
      local quantity = tonumber(first_value(string.format(
         "SELECT s_quantity FROM stock WHERE s_w_id = %d AND s_i_id = %d FOR UPDATE",
         line.supply, line.item)))
      local left = quantity - line.quantity
      if left < 10 then left = left + 91 end
      con:query(string.format(
         "UPDATE stock SET s_quantity = %d, s_ytd = s_ytd + %d, s_order_cnt = s_order_cnt + 1," ..
            " s_remote_cnt = s_remote_cnt + %d WHERE s_w_id = %d AND s_i_id = %d",
         left, line.quantity, line.supply == w and 0 or 1, line.supply, line.item))
      con:query(string.format(
         "INSERT INTO order_line VALUES (%d,%d,%d,%d,%d,%d,NULL,%d,%.2f,'%s')",
         w, d, o, n, line.item, line.supply, line.quantity,
         line.quantity * tonumber(price), text(24)))
   end
   con:query("COMMIT")
   if now() - started >= sysbench.opt.tpcc_warmup then
      counts.new_order = counts.new_order + 1
      local micro = math.max(1, (now() - clock) * 1e6)
      local bucket = math.floor(math.log(micro) / math.log(BUCKET_RATIO)) + 1
      buckets[bucket] = (buckets[bucket] or 0) + 1
   end
end

local function payment(w)
   local d = random(1, DISTRICTS)
   local cw, cd = w, d
   if sysbench.opt.warehouses > 1 and random(1, 100) <= 15 then
      repeat cw = random(1, sysbench.opt.warehouses) until cw ~= w
      cd = random(1, DISTRICTS)
   end
   local amount = random(100, 500000) / 100
   con:query("BEGIN")
   con:query(string.format("UPDATE warehouse SET w_ytd = w_ytd + %.2f WHERE w_id = %d",
                           amount, w))
   con:query(string.format(
      "UPDATE district SET d_ytd = d_ytd + %.2f WHERE d_w_id = %d AND d_id = %d",
      amount, w, d))
   local c = customer_id(cw, cd)
   con:query(string.format(
      "UPDATE customer SET c_balance = c_balance - %.2f, c_ytd_payment = c_ytd_payment + %.2f," ..
         " c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = %d AND c_d_id = %d AND c_id = %d",
      amount, amount, cw, cd, c))
   con:query(string.format(
      "INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, " ..
         "h_data) VALUES (%d,%d,%d,%d,%d,NOW(),%.2f,'%s')", c, cd, cw, d, w, amount, text(12)))
   con:query("COMMIT")
   counted("payment")
end

local function order_status(w)
   local d = random(1, DISTRICTS)
   con:query("BEGIN")
   local c = customer_id(w, d)
   local o = first_value(string.format(
      "SELECT o_id FROM orders WHERE o_w_id = %d AND o_d_id = %d AND o_c_id = %d " ..
         "ORDER BY o_id DESC LIMIT 1", w, d, c))
   if o ~= nil then
      con:query(string.format(
         "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM " ..
            "order_line WHERE ol_w_id = %d AND ol_d_id = %d AND ol_o_id = %d", w, d, o))
   end
   con:query("COMMIT")
   counted("order_status")
end

-- Its reads of orders and order lines lock (read the latest version), as the new orders it
-- finds do: a plain read would see the snapshot of the first district, without the orders
-- committed since.
local function delivery(w)
   local carrier = random(1, 10)
   con:query("BEGIN")
   for d = 1, DISTRICTS do
      local o = first_value(string.format(
         "SELECT no_o_id FROM new_orders WHERE no_w_id = %d AND no_d_id = %d " ..
            "ORDER BY no_o_id LIMIT 1 FOR UPDATE", w, d))
      if o ~= nil then
         con:query(string.format(
            "DELETE FROM new_orders WHERE no_w_id = %d AND no_d_id = %d AND no_o_id = %s",
            w, d, o))
         local c = first_value(string.format(
            "SELECT o_c_id FROM orders WHERE o_w_id = %d AND o_d_id = %d AND o_id = %s " ..
               "FOR UPDATE", w, d, o))
         con:query(string.format(
            "UPDATE orders SET o_carrier_id = %d WHERE o_w_id = %d AND o_d_id = %d AND " ..
               "o_id = %s", carrier, w, d, o))
         con:query(string.format(
            "UPDATE order_line SET ol_delivery_d = NOW() WHERE ol_w_id = %d AND " ..
               "ol_d_id = %d AND ol_o_id = %s", w, d, o))
         local total = first_value(string.format(
            "SELECT COALESCE(SUM(ol_amount), 0) FROM order_line WHERE ol_w_id = %d AND " ..
               "ol_d_id = %d AND ol_o_id = %s FOR UPDATE", w, d, o))
         con:query(string.format(
            "UPDATE customer SET c_balance = c_balance + %s, c_delivery_cnt = " ..
               "c_delivery_cnt + 1 WHERE c_w_id = %d AND c_d_id = %d AND c_id = %s",
            total, w, d, c))
      end
   end
   con:query("COMMIT")
   counted("delivery")
end

local function stock_level(w)
   local d = random(1, DISTRICTS)
   con:query("BEGIN")
   local next_o = first_value(string.format(
      "SELECT d_next_o_id FROM district WHERE d_w_id = %d AND d_id = %d", w, d))
   con:query(string.format(
      "SELECT COUNT(DISTINCT s_i_id) FROM order_line JOIN stock ON s_w_id = %d AND " ..
         "s_i_id = ol_i_id WHERE ol_w_id = %d AND ol_d_id = %d AND ol_o_id < %s AND " ..
         "ol_o_id >= %s - 20 AND s_quantity < %d", w, w, d, next_o, next_o, random(10, 20)))
   con:query("COMMIT")
   counted("stock_level")
end

function event()
   local w = random(1, sysbench.opt.warehouses)
   local pick = random(1, 100)
   if pick <= 45 then
      new_order(w)
   elseif pick <= 88 then
      payment(w)
   elseif pick <= 92 then
      order_status(w)
   elseif pick <= 96 then
      delivery(w)
   else
      stock_level(w)
   end
end

function thread_done()
   local parts = {}
   for bucket, count in pairs(buckets) do
      parts[#parts + 1] = string.format("%d:%d", bucket, count)
   end
   print(string.format(
            "tpcc-counts: new_order=%d rolled_back=%d payment=%d order_status=%d " ..
               "delivery=%d stock_level=%d elapsed=%.3f latency_buckets=%s",
            counts.new_order, counts.rolled_back, counts.payment, counts.order_status,
            counts.delivery, counts.stock_level,
            math.max(0, now() - started - sysbench.opt.tpcc_warmup), table.concat(parts, ",")))
   con:disconnect()
end
