package address

// states maps upper-case two-letter codes and full names to the USPS code.
var states = func() map[string]string {
	m := map[string]string{}
	for code, name := range map[string]string{
		"AL": "Alabama", "AK": "Alaska", "AZ": "Arizona", "AR": "Arkansas", "CA": "California",
		"CO": "Colorado", "CT": "Connecticut", "DE": "Delaware", "FL": "Florida", "GA": "Georgia",
		"HI": "Hawaii", "ID": "Idaho", "IL": "Illinois", "IN": "Indiana", "IA": "Iowa",
		"KS": "Kansas", "KY": "Kentucky", "LA": "Louisiana", "ME": "Maine", "MD": "Maryland",
		"MA": "Massachusetts", "MI": "Michigan", "MN": "Minnesota", "MS": "Mississippi",
		"MO": "Missouri", "MT": "Montana", "NE": "Nebraska", "NV": "Nevada",
		"NH": "New Hampshire", "NJ": "New Jersey", "NM": "New Mexico", "NY": "New York",
		"NC": "North Carolina", "ND": "North Dakota", "OH": "Ohio", "OK": "Oklahoma",
		"OR": "Oregon", "PA": "Pennsylvania", "RI": "Rhode Island", "SC": "South Carolina",
		"SD": "South Dakota", "TN": "Tennessee", "TX": "Texas", "UT": "Utah", "VT": "Vermont",
		"VA": "Virginia", "WA": "Washington", "WV": "West Virginia", "WI": "Wisconsin",
		"WY": "Wyoming", "DC": "District of Columbia", "PR": "Puerto Rico", "GU": "Guam",
		"VI": "Virgin Islands", "AS": "American Samoa", "MP": "Northern Mariana Islands",
		"AA": "Armed Forces Americas", "AE": "Armed Forces Europe", "AP": "Armed Forces Pacific",
	} {
		m[code] = code
		m[upper(name)] = code
	}
	m["WASHINGTON DC"] = "DC"
	m["D.C."] = "DC"
	return m
}()

// maxStateWords is the most words a state name has ("Northern Mariana Islands").
const maxStateWords = 3

// suffixes maps street suffixes, as written, to the USPS abbreviation.
var suffixes = map[string]string{
	"ALLEY": "Aly", "ALY": "Aly", "AVENUE": "Ave", "AVE": "Ave", "AV": "Ave",
	"BOULEVARD": "Blvd", "BLVD": "Blvd", "BEND": "Bnd", "BND": "Bnd", "BYPASS": "Byp",
	"CIRCLE": "Cir", "CIR": "Cir", "COURT": "Ct", "CT": "Ct", "COVE": "Cv", "CV": "Cv",
	"CREEK": "Crk", "CROSSING": "Xing", "XING": "Xing", "DRIVE": "Dr", "DR": "Dr",
	"EXPRESSWAY": "Expy", "EXPY": "Expy", "FREEWAY": "Fwy", "FWY": "Fwy",
	"HIGHWAY": "Hwy", "HWY": "Hwy", "HOLLOW": "Holw", "HILL": "Hl", "HL": "Hl",
	"JUNCTION": "Jct", "JCT": "Jct", "LANE": "Ln", "LN": "Ln", "LOOP": "Loop",
	"MOTORWAY": "Mtwy", "PARKWAY": "Pkwy", "PKWY": "Pkwy", "PARK": "Park",
	"PASS": "Pass", "PATH": "Path", "PIKE": "Pike", "PLACE": "Pl", "PL": "Pl",
	"PLAZA": "Plz", "PLZ": "Plz", "POINT": "Pt", "PT": "Pt", "RIDGE": "Rdg", "RDG": "Rdg",
	"ROAD": "Rd", "RD": "Rd", "ROUTE": "Rte", "RTE": "Rte", "ROW": "Row", "RUN": "Run",
	"SQUARE": "Sq", "SQ": "Sq", "STREET": "St", "ST": "St", "TERRACE": "Ter", "TER": "Ter",
	"TRAIL": "Trl", "TRL": "Trl", "TURNPIKE": "Tpke", "TPKE": "Tpke", "VIEW": "Vw",
	"VW": "Vw", "WALK": "Walk", "WAY": "Way", "WY": "Way", "CENTER": "Ctr", "CTR": "Ctr",
	"HEIGHTS": "Hts", "HTS": "Hts", "GROVE": "Grv", "GRV": "Grv", "HARBOR": "Hbr",
	"MEADOWS": "Mdws", "ESTATES": "Est", "CAUSEWAY": "Cswy", "COURSE": "Crse",
}

// directionals maps directions, as written, to the USPS abbreviation.
var directionals = map[string]string{
	"N": "N", "NORTH": "N", "S": "S", "SOUTH": "S", "E": "E", "EAST": "E", "W": "W",
	"WEST": "W", "NE": "NE", "NORTHEAST": "NE", "NW": "NW", "NORTHWEST": "NW",
	"SE": "SE", "SOUTHEAST": "SE", "SW": "SW", "SOUTHWEST": "SW",
}

// unitDesignators are the words that introduce a secondary unit ("Apt 4", "Suite 200").
var unitDesignators = map[string]bool{
	"APT": true, "APARTMENT": true, "UNIT": true, "STE": true, "SUITE": true, "RM": true,
	"ROOM": true, "FL": true, "FLOOR": true, "BLDG": true, "BUILDING": true, "LOT": true,
	"SPC": true, "SPACE": true, "TRLR": true, "DEPT": true, "PH": true, "NO": true, "#": true,
}
